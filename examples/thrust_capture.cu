// thrust_capture: a Thrust sort and a CUB reduction captured into one graph, their temporary
// storage from the graph's pool, replayed on new data each step.
//
// Thrust and CUB allocate scratch memory for most algorithms. By default Thrust takes it with
// cudaMalloc, which a global-mode capture refuses; graphcap::capture_allocator hands them the
// graph's pool instead. Inside a capture use thrust::cuda::par_nosync: thrust::cuda::par
// synchronizes the stream after the algorithm, which a capturing stream refuses too.
#include <graphcap/allocator.hpp>
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cub/device/device_reduce.cuh>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

/// The step, eagerly: Thrust's own temporaries (cudaMalloc and cudaFree inside each call).
void eager_step(int* keys, int n, long long* sum, cudaStream_t stream) {
  thrust::sort(thrust::cuda::par_nosync.on(stream), keys, keys + n);
  std::size_t temp_bytes = 0;
  example::check(cub::DeviceReduce::Sum(nullptr, temp_bytes, keys, sum, n, stream), "cub sum");
  void* temp = nullptr;
  example::check(cudaMallocAsync(&temp, temp_bytes, stream), "cudaMallocAsync");
  example::check(cub::DeviceReduce::Sum(temp, temp_bytes, keys, sum, n, stream), "cub sum");
  example::check(cudaFreeAsync(temp, stream), "cudaFreeAsync");
}

} // namespace

int main() {
  if (!example::device_present("thrust_capture")) {
    return 0;
  }
  constexpr int n = 1 << 20;
  int* keys = example::allocate<int>(n);
  long long* sum = example::allocate<long long>(1);
  cudaStream_t stream = example::create_stream();

  // [thrust-capture]
  graphcap::graph graph; // global capture mode: a cudaMalloc inside would invalidate it
  graph.capture([&](graphcap::graph::scope& cap) {
    graphcap::capture_allocator temporaries{cap}; // the graph's pool, for cap.stream()
    thrust::sort(thrust::cuda::par_nosync(temporaries).on(cap.stream()), keys, keys + n);

    std::size_t temp_bytes = 0; // CUB: ask for the size, then run with the storage
    example::check(cub::DeviceReduce::Sum(nullptr, temp_bytes, keys, sum, n, cap.stream()),
                   "cub::DeviceReduce::Sum");
    char* temp = temporaries.allocate(temp_bytes);
    example::check(cub::DeviceReduce::Sum(temp, temp_bytes, keys, sum, n, cap.stream()),
                   "cub::DeviceReduce::Sum");
    temporaries.deallocate(temp, temp_bytes);
  });
  // [/thrust-capture]

  std::mt19937 generator(1);
  std::uniform_int_distribution<int> value(-1000, 1000);
  std::vector<int> host(n);
  bool all_right = true;
  for (int step = 0; step < 3; ++step) {
    std::generate(host.begin(), host.end(), [&] { return value(generator); });
    // On the replay's stream: a legacy-stream cudaMemcpy may return before its copy lands, and
    // `stream` (non-blocking) does not wait for it. A sort replayed over keys still being written
    // scatters by counts of other keys: on an H100 (session 19) its third replay faulted
    // (cudaErrorIllegalAddress) when this copy was a plain cudaMemcpy.
    example::check(
        cudaMemcpyAsync(keys, host.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync");
    graph.replay(stream);
    example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<int> sorted(n);
    long long total = 0;
    example::check(cudaMemcpy(sorted.data(), keys, n * sizeof(int), cudaMemcpyDeviceToHost),
                   "cudaMemcpy");
    example::check(cudaMemcpy(&total, sum, sizeof(total), cudaMemcpyDeviceToHost), "cudaMemcpy");
    std::sort(host.begin(), host.end());
    const bool right = sorted == host && total == std::accumulate(host.begin(), host.end(), 0LL);
    all_right = all_right && right;
    std::printf("thrust_capture: replay %d on new data: %s\n", step,
                right ? "sorted, sum right" : "WRONG");
  }
  const graphcap::pool_statistics pool = graph.pool_statistics();
  std::printf("thrust_capture: a graph of %zu nodes; Thrust and CUB temporaries: %zu bytes of "
              "the pool\n",
              graph.node_count(), pool.in_use_bytes);

  constexpr int steps = 100;
  const double eager_us =
      example::time_us(stream, steps, [&] { eager_step(keys, n, sum, stream); });
  const double replay_us = example::time_us(stream, steps, [&] { graph.replay(stream); });
  std::printf("  sort + sum of %d ints: eager %8.2f us, graph replay %8.2f us\n", n, eager_us,
              replay_us);

  graph.reset(); // the pool goes back ordered after the last replay: on `stream`, still alive
  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  example::check(cudaFree(keys), "cudaFree");
  example::check(cudaFree(sum), "cudaFree");
  return all_right ? 0 : EXIT_FAILURE;
}
