// liveness_watch: liveness::check at the cost of a plain replay, with a liveness::free_watch.
//
// liveness::check asks the driver about every input before each replay. A model step has dozens
// of inputs (weights, caches, activations), so those queries add up. A free_watch has CUPTI tell
// graphcap about every call that can free memory: while nothing was freed since a graph's last
// check, its replay skips the queries; after any free, the next replay checks everything again,
// and still refuses a freed input. Links graphcap::free_watch (CUPTI).
#include <graphcap/free_watch.hpp>
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <algorithm>
#include <chrono>
#include <cstdio>

struct weights {
  float* layer[32];
};

__global__ void apply_layers(weights w, float* activations, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (float* layer : w.layer) {
      activations[i] += layer[i];
    }
  }
}

/// Microseconds per replay call: the best of 20 batches of 100 (short batches, so that the launch
/// queue never fills and the host's cost is what is timed).
template <class Graph>
double replay_time(Graph& graph) {
  double best = 1e30;
  for (int batch = 0; batch < 20; ++batch) {
    example::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) {
      graph.replay();
    }
    const auto stop = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(stop - start).count() / 100);
  }
  example::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return best;
}

int main() {
  if (!example::device_present("liveness_watch")) {
    return 0;
  }
  constexpr int n = 256;
  weights w{};
  for (float*& layer : w.layer) {
    layer = example::allocate<float>(n);
    example::check(cudaMemset(layer, 0, n * sizeof(float)), "cudaMemset");
  }
  float* activations = example::allocate<float>(n);
  graphcap::graph_with<graphcap::liveness::check> graph;
  graph.capture([&](cudaStream_t s) { apply_layers<<<1, n, 0, s>>>(w, activations, n); });
  std::printf("liveness_watch: the graph has %zu inputs\n", graph.liveness_policy().input_count());
  const double unwatched = replay_time(graph);

  // [watch]
  graphcap::liveness::free_watch watch; // for as long as the checked graphs replay
  if (!watch.active()) {
    std::puts(watch.reason().c_str()); // CUPTI held by another tool: checks run in full
  }
  graph.replay(); // a full check, then one load per replay until something is freed
  // [/watch]
  const double watched = replay_time(graph);
  std::printf("liveness_watch: %.2f us per checked replay without a watch, %.2f us with one "
              "(watch %s)\n",
              unwatched, watched, watch.active() ? "active" : "inactive");

  example::check(cudaFree(w.layer[7]), "cudaFree"); // a bug: the graph still reads layer 7
  try {
    graph.replay();
    std::printf("liveness_watch: a replay ran on freed memory (this should not happen)\n");
    return 1;
  } catch (const graphcap::liveness_error& refusal) {
    std::printf("liveness_watch: the replay after the free was refused:\n%s\n", refusal.what());
  }
  for (int k = 0; k < 32; ++k) {
    if (k != 7) {
      example::check(cudaFree(w.layer[k]), "cudaFree");
    }
  }
  example::check(cudaFree(activations), "cudaFree");
  return 0;
}
