// A user's program: capture two memsets into a graph and replay it. Without a GPU it reports the
// cuda_error graphcap throws and exits 0: this program checks the build, not the device.
#include <graphcap/graphcap.hpp>

#include <cstdio>

int main() {
  try {
    graphcap::graph_with<graphcap::mode::thread_local_> graph;
    void* buffer = nullptr;
    if (cudaMalloc(&buffer, 1024) != cudaSuccess) {
      throw graphcap::cuda_error(cudaGetLastError(), "cudaMalloc");
    }
    graph.capture([&](cudaStream_t stream) { cudaMemsetAsync(buffer, 0, 1024, stream); });
    graph.replay();
    cudaDeviceSynchronize();
    cudaFree(buffer);
    std::printf("consumer: replayed a graph of %zu node(s)\n", graph.node_count());
  } catch (const graphcap::cuda_error& failure) {
    std::printf("consumer: built and linked; no GPU here: %s\n", failure.what());
  }
  return 0;
}
