// expect: holds the kernels of graphcap::repeat\(\): include it from a \.cu file
// repeat()'s kernels need nvcc: <graphcap/repeat.cuh> refuses a C++ translation unit by name.
// (The nvcc run compiles this file as CUDA: it tests the guard as a host compiler meets it.)
#ifdef __CUDACC__
#undef __CUDACC__
#endif
#ifdef GRAPHCAP_CONTROL
#include <graphcap/repeat.hpp> // the structure alone compiles anywhere
#else
#include <graphcap/repeat.cuh>
#endif
int main() {}
