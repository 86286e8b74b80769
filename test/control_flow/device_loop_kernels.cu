// test/control_flow/device_loop_kernels.cu - see device_loop_kernels.cuh.
#include <graphcap/device_loop.cuh>

#include "device_loop_kernels.cuh"

namespace gctest {
namespace {

__global__ void count_iteration(int* iterations) {
  ++*iterations;
}

__global__ void record_left(int* iterations, unsigned* left, const unsigned* remaining) {
  left[*iterations] = *remaining;
  ++*iterations;
}

} // namespace

void capture_repeat(graphcap::graph& graph, cudaStream_t stream, unsigned n, int* iterations) {
  graph.capture(stream, [&](graphcap::graph::scope& cap) {
    graphcap::device_loop(
        cap, n, [&](cudaStream_t body) { count_iteration<<<1, 1, 0, body>>>(iterations); });
  });
}

void capture_repeat_from_device(graphcap::graph& graph, cudaStream_t stream, const unsigned* trips,
                                int* iterations) {
  graph.capture(stream, [&](graphcap::graph::scope& cap) {
    graphcap::device_loop(
        cap, trips, [&](auto& body) { count_iteration<<<1, 1, 0, body.stream()>>>(iterations); });
  });
}

void capture_nested_repeat(graphcap::graph& graph, cudaStream_t stream, unsigned outer,
                           unsigned inner, int* outer_count, int* inner_count) {
  graph.capture(stream, [&](graphcap::graph::scope& cap) {
    graphcap::device_loop(cap, outer, [&](auto& body) {
      count_iteration<<<1, 1, 0, body.stream()>>>(outer_count);
      graphcap::device_loop(body, inner, [&](cudaStream_t nested) {
        count_iteration<<<1, 1, 0, nested>>>(inner_count);
      });
    });
  });
}

void capture_repeat_with_counter(graphcap::lean_graph& graph, cudaStream_t stream, unsigned n,
                                 unsigned* counter, int* iterations, unsigned* left) {
  graph.capture(stream, [&](graphcap::lean_graph::scope& cap) {
    graphcap::device_loop(cap, n, counter, [&](cudaStream_t body) {
      record_left<<<1, 1, 0, body>>>(iterations, left, counter);
    });
  });
}

} // namespace gctest
