# graphcap_teach_cuda20([PARENT_SCOPE]): CMake < 3.26 does not know that nvcc >= 12 takes
# -std=c++20, so a target with CUDA_STANDARD 20 (or cuda_std_20) fails to configure ("requires
# the language dialect CUDA20 ... does not know the flags"). This tells it, in the calling
# directory (or its parent), once CUDA is enabled there; newer CMake is left alone. graphcap's
# package config calls it for the project that finds graphcap, add_subdirectory for its parent,
# and graphcap's own tests for themselves.
macro(graphcap_teach_cuda20)
  if(CMAKE_VERSION VERSION_LESS 3.26 AND CMAKE_CUDA_COMPILER_LOADED
     AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA" AND NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20" ${ARGN})
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20" ${ARGN})
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20 ${ARGN})
    set(CMAKE_CUDA_COMPILE_FEATURES ${CMAKE_CUDA_COMPILE_FEATURES} cuda_std_20 ${ARGN})
  endif()
endmacro()
