#include "kernels.cuh"

#include <vector>

namespace gctest {
namespace {

constexpr unsigned int threads = 256;

unsigned int blocks_for(std::size_t count) {
  return static_cast<unsigned int>((count + threads - 1) / threads);
}

__global__ void add_scalar(float* data, float value, std::size_t count) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) {
    data[i] += value;
  }
}

__global__ void fill(float* data, float value, std::size_t count) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) {
    data[i] = value;
  }
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

} // namespace

void launch_add_scalar(cudaStream_t stream, float* data, float value, std::size_t count) {
  add_scalar<<<blocks_for(count), threads, 0, stream>>>(data, value, count);
}

void launch_fill(cudaStream_t stream, float* data, float value, std::size_t count) {
  fill<<<blocks_for(count), threads, 0, stream>>>(data, value, count);
}

void launch_spin(cudaStream_t stream, long long cycles) {
  spin<<<1, 1, 0, stream>>>(cycles);
}

double sum(const float* device, std::size_t count) {
  std::vector<float> host(count);
  if (cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    return -1.0;
  }
  double total = 0.0;
  for (const float value : host) {
    total += value;
  }
  return total;
}

} // namespace gctest
