# Languages, architectures and warning flags for graphcap's own tests, examples and benchmarks.
# (The library targets carry none of this: users keep their own flags.)

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90) # the H200 the GPU suite runs on; override on the command line
endif()
if(NOT CMAKE_CUDA_COMPILER AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
  set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
endif()
enable_language(CUDA)
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
