# CUDA is optional: REPRISE_CUDA=AUTO enables it when a CUDA compiler is found.
set(REPRISE_HAVE_CUDA OFF)
if(NOT REPRISE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake 3.25 knows no C++20 dialect for nvcc (13 has it): teach it the flag.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(REPRISE_HAVE_CUDA ON)
    endif()
  endif()
  if(REPRISE_CUDA STREQUAL "ON" AND NOT REPRISE_HAVE_CUDA)
    message(FATAL_ERROR "REPRISE_CUDA=ON but no usable CUDA toolkit was found")
  endif()
endif()
message(STATUS "Reprise CUDA support: ${REPRISE_HAVE_CUDA}")

# reprise_cuda_kernels(target SOURCES ...): .cu files with GPU variants written with
# kernel::for_each (reprise/gpu.h), compiled by nvcc as C++20 with extended lambdas into an
# object library that sees the public headers only. --fmad=false: no fused multiply-adds, so
# that a kernel rounds as the CPU variant's loop does (results bit-identical to CPU runs).
function(reprise_cuda_kernels target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${target}_kernels OBJECT ${ARG_SOURCES})
  set_target_properties(${target}_kernels PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON)
  target_include_directories(${target}_kernels PRIVATE
    $<TARGET_PROPERTY:reprise_runtime,INTERFACE_INCLUDE_DIRECTORIES> ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${target}_kernels PRIVATE
    $<TARGET_PROPERTY:reprise_runtime,INTERFACE_COMPILE_DEFINITIONS>)
  target_compile_options(${target}_kernels PRIVATE --extended-lambda --expt-relaxed-constexpr --fmad=false
                         -Werror=all-warnings)
  target_link_libraries(${target} PRIVATE ${target}_kernels CUDA::cudart)
endfunction()
