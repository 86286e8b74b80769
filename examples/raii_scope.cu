// raii_scope: capturing without a lambda, with forked work, and what a failed capture looks like.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>

__global__ void scale(float* data, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i] *= factor;
  }
}

int main() {
  if (!example::device_present("raii_scope")) {
    return 0;
  }
  constexpr int n = 1024;
  float* a = example::allocate<float>(n);
  float* b = example::allocate<float>(n);
  cudaStream_t main_stream = example::create_stream();
  cudaStream_t side = example::create_stream();
  cudaEvent_t fork = example::create_event();
  cudaEvent_t join = example::create_event();

  // Two branches: fork `side` off the capture stream, join it back before end().
  graphcap::lean_graph graph{graphcap::keep_graph};
  auto cap = graph.begin_capture(main_stream);
  cudaEventRecord(fork, cap.stream());
  cudaStreamWaitEvent(side, fork, 0);
  scale<<<(n + 255) / 256, 256, 0, cap.stream()>>>(a, 2.0F, n);
  scale<<<(n + 255) / 256, 256, 0, side>>>(b, 3.0F, n);
  cudaEventRecord(join, side);
  cudaStreamWaitEvent(cap.stream(), join, 0);
  cap.end();
  std::printf("raii_scope: captured %zu nodes on two branches\n", graph.node_count());
  graph.debug_dump("raii_scope.dot");
  std::printf("raii_scope: wrote raii_scope.dot\n");
  graph.replay(main_stream);
  example::check(cudaStreamSynchronize(main_stream), "cudaStreamSynchronize");

  // A fork that is never joined: end() throws capture_error, and the graph is empty again.
  graphcap::lean_graph broken;
  try {
    auto bad = broken.begin_capture(main_stream);
    cudaEventRecord(fork, bad.stream());
    cudaStreamWaitEvent(side, fork, 0);
    scale<<<(n + 255) / 256, 256, 0, side>>>(b, 3.0F, n);
    bad.end();
  } catch (const graphcap::capture_error& failure) {
    std::printf("raii_scope: as expected, %s\n", failure.what());
  }
  std::printf("raii_scope: graph empty again: %s\n", broken.empty() ? "yes" : "no");

  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(side);
  cudaStreamDestroy(main_stream);
  cudaFree(a);
  cudaFree(b);
  return 0;
}
