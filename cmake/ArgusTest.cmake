# argus_test(NAME SOURCES... LIBS ... LABELS ... [TIMEOUT s] [ARGS ...])
# Each test is its own process with a timeout. Exit 77 means "skipped"
# (a GPU test on a machine without a GPU).
function(argus_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
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
