#include "stress_work.hpp"

namespace gcstress {
namespace {

constexpr unsigned int threads = 256;

__global__ void add(int* data, int value, std::size_t count) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) {
    data[i] += value;
  }
}

} // namespace

void launch_add(cudaStream_t stream, int* data, int value, std::size_t count) {
  const auto blocks = static_cast<unsigned int>((count + threads - 1) / threads);
  add<<<blocks, threads, 0, stream>>>(data, value, count);
}

void release_work() {}

} // namespace gcstress
