// expect: holds the kernels of graphcap::device_loop\(\): include it from a \.cu file
// device_loop()'s kernels need nvcc: <graphcap/device_loop.cuh> refuses a C++ translation unit by
// name. (The nvcc run compiles this file as CUDA: it tests the guard as a host compiler meets it.)
#ifdef __CUDACC__
#undef __CUDACC__
#endif
#ifdef GRAPHCAP_CONTROL
#include <graphcap/control_flow/device_loop.hpp> // the structure alone compiles anywhere
#else
#include <graphcap/device_loop.cuh>
#endif
int main() {}
