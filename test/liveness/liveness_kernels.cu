#include "liveness_kernels.cuh"

// Kernels at global scope, with names the tests look for in liveness_error messages.

__global__ void liveness_scale_raw(float* data, float factor, unsigned long long count) {
  const unsigned long long i =
      blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  if (i < count) {
    data[i] *= factor;
  }
}

__global__ void liveness_scale_view(gctest::scaled_view view, float factor) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < view.count) {
    view.data[i] *= factor;
  }
}

__global__ void liveness_copy_indirect(float* data, const float* const* table,
                                       unsigned long long count) {
  const unsigned long long i =
      blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  if (i < count) {
    data[i] = (*table)[i];
  }
}

namespace gctest {
namespace {

constexpr unsigned int threads = 256;

unsigned int blocks_for(std::size_t count) {
  return static_cast<unsigned int>((count + threads - 1) / threads);
}

} // namespace

void launch_scale_raw(cudaStream_t stream, float* data, float factor, std::size_t count) {
  liveness_scale_raw<<<blocks_for(count), threads, 0, stream>>>(data, factor, count);
}

void launch_scale_view(cudaStream_t stream, scaled_view view, float factor) {
  liveness_scale_view<<<blocks_for(static_cast<std::size_t>(view.count)), threads, 0, stream>>>(
      view, factor);
}

void launch_copy_indirect(cudaStream_t stream, float* data, const float* const* table,
                          std::size_t count) {
  liveness_copy_indirect<<<blocks_for(count), threads, 0, stream>>>(data, table, count);
}

} // namespace gctest
