// quickstart: a loop of small kernels, launched eagerly and replayed as a graph.
//
// Capture the loop body once; replay it every step. Each replay is one cudaGraphLaunch instead
// of one launch per kernel.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <chrono>
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
  float* x = nullptr;
  float* y = nullptr;
  example::check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
  example::check(cudaMalloc(&y, n * sizeof(float)), "cudaMalloc");
  cudaStream_t stream = nullptr;
  example::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  auto step = [&](cudaStream_t s) {
    for (int k = 0; k < kernels_per_step; ++k) {
      axpy<<<(n + 255) / 256, 256, 0, s>>>(0.5F, x, y, n);
    }
  };

  // Eager: one launch per kernel.
  step(stream); // warm-up
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    step(stream);
  }
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::chrono::duration<double, std::micro> eager = std::chrono::steady_clock::now() - start;

  // Graph: capture the step once, replay it.
  graphcap::lean_graph graph;
  graph.capture(step); // on the graph's own side stream; nothing runs yet
  graph.upload(stream);
  graph.replay(stream); // warm-up
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    graph.replay(stream);
  }
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::chrono::duration<double, std::micro> replayed =
      std::chrono::steady_clock::now() - start;

  std::printf("quickstart: %d steps of %d kernels (graph of %zu nodes)\n", steps, kernels_per_step,
              graph.node_count());
  std::printf("  eager launches: %8.2f us per step\n", eager.count() / steps);
  std::printf("  graph replay:   %8.2f us per step (%.1fx)\n", replayed.count() / steps,
              eager.count() / replayed.count());

  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  example::check(cudaFree(x), "cudaFree");
  example::check(cudaFree(y), "cudaFree");
  return 0;
}
