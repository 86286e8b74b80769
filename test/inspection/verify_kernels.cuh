// test/inspection/verify_kernels.cuh - the kernels the verify() GPU tests capture, behind host
// launchers (kernels.cuh says why Catch2 never meets nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gctest {

/// y[i] = a * x[i] + 1, for i < count, on `stream`.
void launch_saxpy(cudaStream_t stream, const float* x, float* y, float a, std::size_t count);
/// *total = 0, then every thread adds its x[i] with atomicAdd (the order is the hardware's).
void launch_atomic_sum(cudaStream_t stream, const float* x, float* total, std::size_t count);
/// *total = the sum of x, one thread, forward on even launches and backward on odd ones (the
/// launch counter is *launches, incremented atomically): a reduction whose rounding differs
/// between two consecutive runs by construction, as an atomic one may.
void launch_ordered_sum(cudaStream_t stream, const float* x, float* total, int* launches,
                        std::size_t count);

} // namespace gctest
