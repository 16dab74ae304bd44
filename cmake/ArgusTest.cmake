# argus_test(NAME SOURCES... LIBS ... LABELS ... [TIMEOUT s] [ARGS ...])
# Each test is its own process with a timeout. Exit 77 means "skipped"
# (a GPU test on a machine without a GPU).
# A test that links a library built only with the CUDA toolkit (CMake's
# ARGUS_HAVE_CUDA) is registered, when it is missing, as one that says so and
# exits 77.
function(argus_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  foreach(l ${T_LIBS})
    if(l MATCHES "^argus_" AND NOT TARGET ${l})
      add_test(NAME ${name} COMMAND sh -c
        "echo '${name}: skipped: it needs ${l}, built only with the CUDA toolkit (none at ${ARGUS_CUDA_HOME})'; exit 77")
      set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77)
      return()
    endif()
  endforeach()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE 77
    ENVIRONMENT "ARGUS_SOURCE_DIR=${PROJECT_SOURCE_DIR};ARGUS_BUILD_DIR=${PROJECT_BINARY_DIR};ARGUS_BIN=$<TARGET_FILE:argus>")
endfunction()
