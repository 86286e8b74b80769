// liveness: a graph whose input is freed refuses to replay, and says which input and where.
//
// A graph bakes in the addresses it saw at capture. With graphcap::liveness::check, every replay
// first asks the driver whether each input is still the allocation it was; if one was freed (or
// freed and reallocated at the same address), replay() throws graphcap::liveness_error and
// launches nothing, instead of silently reading whatever lives there now.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>

__global__ void scale(float* data, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i] *= factor;
  }
}

__global__ void accumulate(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] += in[i];
  }
}

int main() {
  if (!example::device_present("liveness")) {
    return 0;
  }
  constexpr int n = 1 << 12;
  constexpr int blocks = (n + 255) / 256;
  float* in = example::allocate<float>(n);
  float* out = example::allocate<float>(n);
  example::check(cudaMemset(in, 0, n * sizeof(float)), "cudaMemset");
  example::check(cudaMemset(out, 0, n * sizeof(float)), "cudaMemset");

  // [check]
  graphcap::graph_with<graphcap::liveness::check> graph;
  graph.capture([&](cudaStream_t s) {
    scale<<<blocks, 256, 0, s>>>(in, 2.0F, n);
    accumulate<<<blocks, 256, 0, s>>>(in, out, n);
  }); // the inputs (in, out) are read from the captured kernel nodes here
  graph.replay();
  // [/check]
  example::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::printf("liveness: captured %zu nodes, tracking %zu inputs; replay 1 ran\n",
              graph.node_count(), graph.liveness_policy().input_count());

  // [refused]
  example::check(cudaFree(in), "cudaFree"); // a bug: the graph still reads `in`
  try {
    graph.replay();
    std::printf("liveness: replay 2 ran on freed memory (this should not happen)\n");
    return 1;
  } catch (const graphcap::liveness_error& refusal) {
    std::printf("liveness: replay 2 refused:\n%s\n", refusal.what());
  }
  // [/refused]

  example::check(cudaFree(out), "cudaFree");
  return 0;
}
