# `cmake --install BUILD [--prefix DIR]` (docs/api.md, "Installing"):
#   bin/argus, bin/argus-worker     the CLI and its multi-variant GPU worker
#   lib/libargus.so.N               the client API (soname: ARGUS_API_VERSION)
#   lib/libargus_host.a             the harness runtime
#   lib/libargus_host.so.1          the same, shared (Triton's Python process loads it)
#   include/argus/{argus.h,host.h,region.cuh}
#   lib/pkgconfig/{argus,argus-host}.pc, lib/cmake/Argus/  (find_package(Argus))
# Every installed path is relative to the prefix (the .pc files use
# ${pcfiledir}, the CMake package its own location), so --prefix may differ
# from CMAKE_INSTALL_PREFIX. tests/install/test_install.sh installs into a
# temporary prefix and builds a client and a harness against it.
set(_inst ${PROJECT_SOURCE_DIR}/cmake/install)
# the CUDA libraries argus links (NVRTC) stay found after installation
set_target_properties(argus argus_api PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS argus RUNTIME DESTINATION bin)
install(TARGETS argus_api LIBRARY DESTINATION lib)
install(FILES ${PROJECT_SOURCE_DIR}/include/argus/argus.h DESTINATION include/argus)
configure_file(${_inst}/argus.pc.in ${PROJECT_BINARY_DIR}/install/argus.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/install/argus.pc DESTINATION lib/pkgconfig)
if(TARGET argus_host)
  install(TARGETS argus-worker RUNTIME DESTINATION bin)
  install(TARGETS argus_host ARCHIVE DESTINATION lib)
  install(TARGETS argus_host_shared LIBRARY DESTINATION lib)
  install(FILES ${PROJECT_SOURCE_DIR}/include/argus/host.h
                ${PROJECT_SOURCE_DIR}/include/argus/region.cuh DESTINATION include/argus)
  configure_file(${_inst}/argus-host.pc.in ${PROJECT_BINARY_DIR}/install/argus-host.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/install/argus-host.pc DESTINATION lib/pkgconfig)
endif()
include(CMakePackageConfigHelpers)
configure_file(${_inst}/ArgusConfig.cmake.in ${PROJECT_BINARY_DIR}/install/ArgusConfig.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/install/ArgusConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/install/ArgusConfig.cmake
              ${PROJECT_BINARY_DIR}/install/ArgusConfigVersion.cmake DESTINATION lib/cmake/Argus)
unset(_inst)
