// A user's CUDA translation unit, built with nothing but target_link_libraries(graphcap::graphcap)
// (no compile features, no CUDA_STANDARD: nvcc's default is C++17, and graphcap's target must
// give it C++20) and once more with CUDA_STANDARD 20 (which CMake < 3.26 cannot do for nvcc
// unless graphcap's package teaches it). Captures a kernel into a graph and replays it; without a
// GPU it reports the cuda_error graphcap throws and exits 0: this program checks the build.
#include <graphcap/graphcap.hpp>

#include <cstdio>

static_assert(__cplusplus >= 202002L, "the consumer's .cu file must compile as C++20");

__global__ void fill(int* data, int value, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    data[i] = value;
  }
}

int main() {
  try {
    graphcap::graph graph;
    int* data = nullptr;
    if (cudaMalloc(&data, 256 * sizeof(int)) != cudaSuccess) {
      throw graphcap::cuda_error(cudaGetLastError(), "cudaMalloc");
    }
    graph.capture([&](cudaStream_t stream) { fill<<<1, 256, 0, stream>>>(data, 7, 256); });
    graph.replay();
    cudaDeviceSynchronize();
    int first = 0;
    cudaMemcpy(&first, data, sizeof first, cudaMemcpyDeviceToHost);
    cudaFree(data);
    std::printf("consumer_cu: replayed a graph of %zu node(s), data[0] = %d\n", graph.node_count(),
                first);
  } catch (const graphcap::cuda_error& failure) {
    std::printf("consumer_cu: built as C++20 and linked; no GPU here: %s\n", failure.what());
  }
  return 0;
}
