// test/gpu/kernels.cuh - the kernels the GPU tests capture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gctest {

__global__ void add_scalar(float* data, float value, std::size_t count);
__global__ void fill(float* data, float value, std::size_t count);
__global__ void spin(long long cycles);

/// Sum of `count` floats of device memory, copied to the host (synchronous, not capturable).
double sum(const float* device, std::size_t count);

inline unsigned int blocks_for(std::size_t count, unsigned int threads = 256) {
  return static_cast<unsigned int>((count + threads - 1) / threads);
}

} // namespace gctest
