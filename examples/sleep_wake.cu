// sleep_wake: a pool that can sleep (pool::sleepable). The graph's memory goes back to the driver
// while the GPU does something else, and comes back at the same addresses: the graph replays as
// it was captured, with no recapture and no update.
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "example_support.cuh"

#include <cstdio>
#include <vector>

__global__ void accumulate(float* state, const float* input, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    state[i] += input[i];
  }
}

namespace {

std::size_t free_device_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  example::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

} // namespace

int main() {
  if (!example::device_present("sleep_wake")) {
    return 0;
  }
  constexpr int n = 1 << 24; // 64 MiB of state
  constexpr int blocks = (n + 255) / 256;
  float* input = example::allocate<float>(n);
  example::check(cudaMemset(input, 0, n * sizeof(float)), "cudaMemset");
  std::vector<float> one(n, 1.0F);
  example::check(cudaMemcpy(input, one.data(), n * sizeof(float), cudaMemcpyHostToDevice),
                 "cudaMemcpy");
  cudaStream_t stream = example::create_stream();

  // [sleep-wake]
  using sleepy_graph = graphcap::graph_with<graphcap::pool::sleepable>;
  sleepy_graph step;
  float* state = step.capture(stream, [&](sleepy_graph::scope& cap) {
    float* kept = cap.allocate<float>(n); // from the pool's VMM chunks, fixed address
    accumulate<<<blocks, 256, 0, cap.stream()>>>(kept, input, n);
    return kept;
  });
  example::check(cudaMemsetAsync(state, 0, n * sizeof(float), stream), "cudaMemsetAsync");
  step.replay(stream); // state == 1

  graphcap::sleepable_pool_handle pool = step.pool();
  pool.sleep(graphcap::pool::backup::host); // waits for the replay, copies, releases the pages
  // ... the GPU memory is free for something else; step.replay() would throw state_error ...
  pool.wake(); // new pages at the same addresses, the backup copied back

  step.replay(stream); // the same executable: state == 2
  // [/sleep-wake]

  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  float first = 0;
  example::check(cudaMemcpy(&first, state, sizeof first, cudaMemcpyDeviceToHost), "cudaMemcpy");
  const std::size_t awake = free_device_bytes();
  pool.sleep(); // backup::none: the contents go
  const std::size_t asleep = free_device_bytes();
  pool.wake();
  std::printf("sleep_wake: state %.0f after sleep and wake (expected 2); sleeping freed %zu MiB "
              "of the pool's %zu MiB\n",
              static_cast<double>(first), (asleep - awake) >> 20,
              step.pool_statistics().reserved_bytes >> 20);

  // [carve]
  // A pool mapped in one piece, sized from the first capture: the captures that fit take no
  // memory of their own, and it sleeps and wakes in one piece from its first sleep.
  graphcap::sleepable_pool_handle carved;
  carved.carve(step.pool_statistics().reserved_bytes); // out_of_memory_error if not free
  sleepy_graph again{carved};
  float* second = again.capture(stream, [&](sleepy_graph::scope& cap) {
    float* kept = cap.allocate<float>(n); // in the carve: no driver call
    accumulate<<<blocks, 256, 0, cap.stream()>>>(kept, input, n);
    return kept;
  });
  example::check(cudaMemsetAsync(second, 0, n * sizeof(float), stream), "cudaMemsetAsync");
  again.replay(stream);
  carved.sleep(graphcap::pool::backup::host); // one cuMemUnmap, the first sleep too
  carved.wake();                              // one cuMemCreate + cuMemMap
  again.replay(stream);                       // second == 2
  // [/carve]
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  float carved_first = 0;
  example::check(cudaMemcpy(&carved_first, second, sizeof carved_first, cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
  std::printf("sleep_wake: carved pool of %zu MiB, state %.0f after sleep and wake (expected 2), "
              "%zu MiB resident\n",
              carved.carved_bytes() >> 20, static_cast<double>(carved_first),
              carved.resident_bytes() >> 20);
  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  example::check(cudaFree(input), "cudaFree");
  return first == 2.0F && carved_first == 2.0F && carved.resident_bytes() == carved.carved_bytes()
             ? 0
             : 1;
}
