# `cmake --install` and the package an application outside this tree uses:
#   find_package(Reprise CONFIG REQUIRED)  ->  target_link_libraries(app PRIVATE Reprise::reprise)
# or, from a Makefile, `pkg-config --cflags --libs reprise`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every library `reprise` links (the layers are separate libraries; their headers stay private:
# only runtime/include/reprise/ is installed).
set(REPRISE_INSTALLED_LIBRARIES
  reprise_tracing reprise_autotrace reprise_repeats reprise_memoizer reprise_analysis
  reprise_transport reprise_gpu reprise_runtime)
install(TARGETS reprise reprise_internal ${REPRISE_INSTALLED_LIBRARIES}
  EXPORT RepriseTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY runtime/include/reprise DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(REPRISE_BUILD_APPS)
  install(TARGETS reprise-repeats reprise-autotrace-sim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(REPRISE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Reprise)
install(EXPORT RepriseTargets NAMESPACE Reprise:: DESTINATION ${REPRISE_CMAKE_DIR})
configure_package_config_file(cmake/RepriseConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/RepriseConfig.cmake INSTALL_DESTINATION ${REPRISE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/RepriseConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/RepriseConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/RepriseConfigVersion.cmake
  DESTINATION ${REPRISE_CMAKE_DIR})

# pkg-config: the libraries in link order, then what they need.
set(REPRISE_PC_LIBS "")
foreach(lib ${REPRISE_INSTALLED_LIBRARIES})
  string(APPEND REPRISE_PC_LIBS " -l${lib}")
endforeach()
set(REPRISE_PC_EXTRA "")
if(REPRISE_HAVE_CUDA)
  get_filename_component(cudart_dir "${CUDA_cudart_LIBRARY}" DIRECTORY)
  string(APPEND REPRISE_PC_EXTRA " -L${cudart_dir} -Wl,-rpath,${cudart_dir} -lcudart")
endif()
configure_file(cmake/reprise.pc.in ${CMAKE_CURRENT_BINARY_DIR}/reprise.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/reprise.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
