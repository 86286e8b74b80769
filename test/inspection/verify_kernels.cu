#include "verify_kernels.cuh"

namespace gctest {
namespace {

constexpr unsigned int threads = 256;

unsigned int blocks_for(std::size_t count) {
  return static_cast<unsigned int>((count + threads - 1) / threads);
}

__global__ void saxpy(const float* x, float* y, float a, std::size_t count) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) {
    y[i] = a * x[i] + 1.0F;
  }
}

__global__ void atomic_sum(const float* x, float* total, std::size_t count) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) {
    atomicAdd(total, x[i]);
  }
}

__global__ void ordered_sum(const float* x, float* total, int* launches, std::size_t count) {
  const bool backward = (atomicAdd(launches, 1) & 1) != 0;
  float sum = 0.0F;
  for (std::size_t k = 0; k < count; ++k) {
    sum += x[backward ? count - 1 - k : k];
  }
  *total = sum;
}

} // namespace

void launch_saxpy(cudaStream_t stream, const float* x, float* y, float a, std::size_t count) {
  saxpy<<<blocks_for(count), threads, 0, stream>>>(x, y, a, count);
}

void launch_atomic_sum(cudaStream_t stream, const float* x, float* total, std::size_t count) {
  static_cast<void>(cudaMemsetAsync(total, 0, sizeof(float), stream));
  atomic_sum<<<blocks_for(count), threads, 0, stream>>>(x, total, count);
}

void launch_ordered_sum(cudaStream_t stream, const float* x, float* total, int* launches,
                        std::size_t count) {
  ordered_sum<<<1, 1, 0, stream>>>(x, total, launches, count);
}

} // namespace gctest
