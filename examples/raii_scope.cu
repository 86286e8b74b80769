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
  float* a = nullptr;
  float* b = nullptr;
  example::check(cudaMalloc(&a, n * sizeof(float)), "cudaMalloc");
  example::check(cudaMalloc(&b, n * sizeof(float)), "cudaMalloc");
  cudaStream_t main_stream = nullptr;
  cudaStream_t side = nullptr;
  cudaEvent_t fork = nullptr;
  cudaEvent_t join = nullptr;
  example::check(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking), "stream");
  example::check(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "stream");
  example::check(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "event");
  example::check(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), "event");

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
