# The two commands of the README:
#   make run   installs dependencies, builds, and runs the main job
#   make test  installs dependencies, builds, and runs every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test test-unit asan configs gpu clean

all: build

deps:
	@sh scripts/deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	sh scripts/main-job.sh $(BUILD)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, then
# `argus check` fuzzed under them (docs/testing.md): the fixed seeds, then
# seeds derived from the date until FUZZ_SECONDS have passed; failing inputs
# are saved to $(BUILD)-asan/fuzz-failures.
FUZZ_SEEDS ?= 0:100
FUZZ_SECONDS ?= 180
# CPU seconds per input under ASan+UBSan, which run the checker about 5 times
# slower: 150 s there is about 30 s of the plain build (fixed seed 83, a
# mutated attention kernel, takes 21 s plain since the race checks grew: 279
# solver queries; it was 4.6 s before)
FUZZ_TIMEOUT ?= 150
asan: deps
	cmake -S . -B $(BUILD)-asan -G Ninja -DARGUS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) -L unit
	python3 tests/fuzz/fuzz_check.py --argus $(BUILD)-asan/tools/argus/argus --jobs $(JOBS) --timeout $(FUZZ_TIMEOUT) \
	  --seeds $(FUZZ_SEEDS) --date-seed --seconds $(FUZZ_SECONDS) --out $(BUILD)-asan/fuzz-failures

# Build only, in build dirs of their own: the configurations `make build`
# (RelWithDebInfo, cc) does not cover: Release with cc, and Release and
# RelWithDebInfo with clang where it is installed (CI, .ci/run).
configs: deps
	cmake -S . -B $(BUILD)-release -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD)-release -j $(JOBS)
	@if command -v clang >/dev/null 2>&1; then \
	  for t in Release RelWithDebInfo; do \
	    cmake -S . -B $(BUILD)-clang-$$t -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=$$t $(CMAKE_FLAGS) && \
	    cmake --build $(BUILD)-clang-$$t -j $(JOBS) || exit 1; \
	  done; \
	else echo "configs: clang not installed: the clang builds are skipped"; fi

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-release $(BUILD)-clang-Release $(BUILD)-clang-RelWithDebInfo
