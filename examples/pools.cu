// pools: memory allocated during a capture. A graph's allocations keep their address for every
// replay; graphs that run one after the other can share a pool and reserve less.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>

__global__ void square(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i] * in[i];
  }
}

__global__ void add(const float* a, const float* b, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = a[i] + b[i];
  }
}

int main() {
  if (!example::device_present("pools")) {
    return 0;
  }
  constexpr int n = 1 << 20;
  constexpr int blocks = (n + 255) / 256;
  float* input = example::allocate<float>(n);
  example::check(cudaMemset(input, 0, n * sizeof(float)), "cudaMemset");

  // [shared-pool]
  // One pool for two graphs that always run in this order (never at the same time).
  const auto pool = graphcap::graph_pool_handle();
  using shared_graph = graphcap::graph_with<graphcap::pool::shared>;

  shared_graph first{pool};
  float* first_output = first.capture([&](shared_graph::scope& cap) {
    float* temporary = cap.allocate<float>(n); // from the pool, fixed address
    float* output = cap.allocate<float>(n);    // kept: read after each replay
    square<<<blocks, 256, 0, cap.stream()>>>(input, temporary, n);
    add<<<blocks, 256, 0, cap.stream()>>>(temporary, input, output, n);
    cap.deallocate(temporary); // free for later captures of this pool
    return output;
  });

  shared_graph second{first.pool()}; // or {pool}: the same pool
  float* second_output = second.capture([&](shared_graph::scope& cap) {
    float* temporary = cap.allocate<float>(n); // reuses the first graph's temporary
    float* output = cap.allocate<float>(n);
    square<<<blocks, 256, 0, cap.stream()>>>(first_output, temporary, n);
    add<<<blocks, 256, 0, cap.stream()>>>(temporary, first_output, output, n);
    cap.deallocate(temporary);
    return output;
  });
  // [/shared-pool]

  first.replay(); // capture order, one stream: the pool's rule
  second.replay();
  example::check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  const graphcap::pool_statistics shared_stats = pool.statistics();
  std::printf("pools: two graphs sharing a pool reserve %zu bytes in %zu slabs "
              "(%zu bytes in use)\n",
              shared_stats.reserved_bytes, shared_stats.slabs, shared_stats.in_use_bytes);

  // The same two captures with private pools: each graph reserves its own.
  graphcap::graph alone;
  alone.capture([&](graphcap::graph::scope& cap) {
    float* temporary = cap.allocate<float>(n);
    float* output = cap.allocate<float>(n);
    square<<<blocks, 256, 0, cap.stream()>>>(input, temporary, n);
    add<<<blocks, 256, 0, cap.stream()>>>(temporary, input, output, n);
  });
  std::printf("pools: one graph with a private pool reserves %zu bytes\n",
              alone.pool_statistics().reserved_bytes);
  std::printf("pools: outputs at %p and %p stay valid while their graphs live\n",
              static_cast<void*>(first_output), static_cast<void*>(second_output));
  example::check(cudaFree(input), "cudaFree");
  return 0;
}
