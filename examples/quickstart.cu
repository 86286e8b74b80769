// quickstart: a loop of small kernels, launched eagerly and replayed as a graph.
//
// Capture the loop body once; replay it every step. Each replay is one cudaGraphLaunch instead
// of one launch per kernel.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>

__global__ void axpy(float a, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}

int main() {
  if (!example::device_present("quickstart")) {
    return 0;
  }
  constexpr int n = 1 << 12;
  constexpr int kernels_per_step = 20;
  constexpr int steps = 2000;
  float* x = example::allocate<float>(n);
  float* y = example::allocate<float>(n);
  cudaStream_t stream = example::create_stream();

  auto step = [&](cudaStream_t s) {
    for (int k = 0; k < kernels_per_step; ++k) {
      axpy<<<(n + 255) / 256, 256, 0, s>>>(0.5F, x, y, n);
    }
  };

  // Eager: one launch per kernel.
  const double eager_us = example::time_us(stream, steps, [&] { step(stream); });

  // Graph: capture the step once, replay it.
  graphcap::lean_graph graph;
  graph.capture(step); // on the graph's own side stream; nothing runs yet
  graph.upload(stream);
  const double replay_us = example::time_us(stream, steps, [&] { graph.replay(stream); });

  std::printf("quickstart: %d steps of %d kernels (graph of %zu nodes)\n", steps, kernels_per_step,
              graph.node_count());
  std::printf("  eager launches: %8.2f us per step\n", eager_us);
  std::printf("  graph replay:   %8.2f us per step (%.1fx)\n", replay_us, eager_us / replay_us);

  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  example::check(cudaFree(x), "cudaFree");
  example::check(cudaFree(y), "cudaFree");
  return 0;
}
