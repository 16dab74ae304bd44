# The two commands of the README:
#   make run   installs dependencies, builds, and runs the main job
#   make test  installs dependencies, builds, and runs every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test test-unit asan gpu clean

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

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: deps
	cmake -S . -B $(BUILD)-asan -G Ninja -DARGUS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) -L unit

clean:
	rm -rf $(BUILD) $(BUILD)-asan
