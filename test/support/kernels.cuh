// test/support/kernels.cuh - the kernels the GPU tests capture, behind plain host launchers.
//
// Only kernels.cu is compiled by nvcc; the tests themselves are C++ files built by the host
// compiler. Catch2 never meets nvcc: on the GPU machine cudafe++ did not finish a .cu file that
// includes Catch2 v3 in 4 minutes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gctest {

/// data[i] += value, for i < count, on `stream`.
void launch_add_scalar(cudaStream_t stream, float* data, float value, std::size_t count);
/// data[i] = value, for i < count, on `stream`.
void launch_fill(cudaStream_t stream, float* data, float value, std::size_t count);
/// One thread that spins for about `cycles` clock cycles, on `stream`.
void launch_spin(cudaStream_t stream, long long cycles);

/// Sum of `count` floats of device memory, copied to the host (synchronous, not capturable);
/// -1 if the copy failed.
double sum(const float* device, std::size_t count);

} // namespace gctest
