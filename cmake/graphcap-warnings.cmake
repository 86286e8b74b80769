# Languages, architectures and warning flags for graphcap's own tests, examples and benchmarks.
# (The library targets carry none of this: users keep their own flags.)

# GPU architectures: CMAKE_CUDA_ARCHITECTURES or the CUDAARCHS environment variable when given
# (CMake reads the latter itself); else the GPU of this machine (nvidia-smi's compute capability:
# CMake's "native" fails where there is none); else 90, the H200 graphcap's GPU suite runs on.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  execute_process(COMMAND nvidia-smi --query-gpu=compute_cap --format=csv,noheader
    OUTPUT_VARIABLE graphcap_compute_caps RESULT_VARIABLE graphcap_smi_status ERROR_QUIET)
  if(graphcap_smi_status EQUAL 0 AND graphcap_compute_caps MATCHES "^([0-9]+)\\.([0-9]+)")
    set(CMAKE_CUDA_ARCHITECTURES "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
  else()
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  message(STATUS "graphcap: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES} (set "
                 "CMAKE_CUDA_ARCHITECTURES or CUDAARCHS for others)")
endif()
if(NOT CMAKE_CUDA_COMPILER AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
  set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
endif()
enable_language(CUDA)
# The one architecture the compile tests pass to nvcc by hand (-arch=sm_NN): the first listed,
# without -real/-virtual; none (nvcc's default) for "all", "native" and the like.
list(GET CMAKE_CUDA_ARCHITECTURES 0 graphcap_first_arch)
string(REGEX REPLACE "-.*$" "" graphcap_first_arch "${graphcap_first_arch}")
if(graphcap_first_arch MATCHES "^[0-9]+$")
  set(GRAPHCAP_TEST_ARCH_FLAG -arch=sm_${graphcap_first_arch})
else()
  set(GRAPHCAP_TEST_ARCH_FLAG "")
endif()
graphcap_teach_cuda20() # CMake < 3.26 does not know nvcc's -std=c++20 (cmake/graphcap-cuda20.cmake)
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)

# Warnings are errors in everything graphcap builds itself.
add_library(graphcap_warnings INTERFACE)
target_compile_options(graphcap_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra>)
