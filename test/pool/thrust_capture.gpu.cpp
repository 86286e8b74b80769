// GPU tests: Thrust and CUB algorithms captured under global mode, their temporaries from the
// graph's pool (graphcap/allocator.hpp), replayed on new data with correct results. A global-mode
// capture fails if anything calls cudaMalloc during it, so a capture that ends proves that the
// libraries' scratch memory came from the pool.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "thrust_work.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace gc = graphcap;

namespace {

std::vector<int> random_ints(std::size_t count, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> value(-1000000, 1000000);
  std::vector<int> values(count);
  std::generate(values.begin(), values.end(), [&] { return value(generator); });
  return values;
}

/// Copies `values` into `keys`, replays `graph` (a sort of `keys`) on `stream`, and returns what
/// `keys` holds then.
std::vector<int> replayed_on(const std::vector<int>& values, const gctest::device_buffer<int>& keys,
                             gc::graph& graph, const gctest::stream& stream) {
  CUDA_REQUIRE(cudaMemcpy(keys.get(), values.data(), keys.bytes(), cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  graph.replay(stream);
  stream.synchronize();
  std::vector<int> sorted(keys.size());
  CUDA_REQUIRE(cudaMemcpy(sorted.data(), keys.get(), keys.bytes(), cudaMemcpyDeviceToHost));
  return sorted;
}

} // namespace

TEST_CASE("thrust::sort captured with par_nosync and pool temporaries sorts new data each replay") {
  STATIC_REQUIRE(std::is_same_v<gc::graph::mode_type, gc::mode::global>);
  constexpr std::size_t count = 1 << 20;
  gctest::device_buffer<int> keys(count);
  gctest::stream stream;
  gc::graph graph;
  graph.capture([&](gc::graph::scope& cap) {
    gctest::thrust_sort(cap, keys.get(), count, gctest::thrust_policy::no_sync);
  });
  CHECK(graph.node_count() > 0);
  const gc::pool_statistics after_capture = graph.pool_statistics();
  CHECK(after_capture.blocks_in_use > 0); // thrust's temporaries, held by the graph
  CHECK(after_capture.reserved_bytes >= count * sizeof(int));

  for (std::uint32_t round = 0; round < 3; ++round) {
    INFO("replay " << round);
    std::vector<int> host = random_ints(count, round + 1);
    const std::vector<int> sorted = replayed_on(host, keys, graph, stream);
    std::sort(host.begin(), host.end());
    CHECK(sorted == host);
  }
  CHECK(graph.pool_statistics().reserved_bytes == after_capture.reserved_bytes); // no growth
  gctest::require_no_last_error();
}

TEST_CASE("cub::DeviceReduce::Sum captured with temp storage from the pool") {
  constexpr std::size_t count = 100000;
  gctest::device_buffer<int> values(count);
  gctest::device_buffer<int> sums(2);
  gctest::stream stream;
  gc::graph graph;
  std::size_t temp_bytes = 0;
  graph.capture([&](gc::graph::scope& cap) {
    temp_bytes =
        gctest::cub_sum(cap, values.get(), sums.get(), count, gctest::cub_storage::allocator);
    gctest::cub_sum(cap, values.get(), sums.get() + 1, count, gctest::cub_storage::resource);
  });
  CHECK(temp_bytes > 0);
  // The second call reused the block the first one gave back (same size, same stream).
  CHECK(graph.pool_statistics().blocks_in_use == 1);

  for (std::uint32_t round = 0; round < 3; ++round) {
    INFO("replay " << round);
    std::vector<int> host(count);
    std::iota(host.begin(), host.end(), static_cast<int>(round) * 7 - 50000);
    CUDA_REQUIRE(cudaMemcpy(values.get(), host.data(), values.bytes(), cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemset(sums.get(), 0, sums.bytes()));
    // Legacy-stream copies and memsets may return before they ran, and `stream` does not
    // wait for the legacy stream (non-blocking): finish them first.
    CUDA_REQUIRE(cudaDeviceSynchronize());
    graph.replay(stream);
    stream.synchronize();
    std::vector<int> results(2, 0);
    CUDA_REQUIRE(cudaMemcpy(results.data(), sums.get(), sums.bytes(), cudaMemcpyDeviceToHost));
    const long long expected = std::accumulate(host.begin(), host.end(), 0LL);
    CHECK(results[0] == expected);
    CHECK(results[1] == expected);
  }
}

TEST_CASE("thrust::cuda::par synchronizes the capturing stream: the capture fails cleanly") {
  constexpr std::size_t count = 1 << 16;
  gctest::device_buffer<int> keys(count);
  gctest::stream stream;
  gc::graph graph;
  CHECK_THROWS(graph.capture([&](gc::graph::scope& cap) {
    gctest::thrust_sort(cap, keys.get(), count, gctest::thrust_policy::synchronizing);
  }));
  CHECK(graph.empty());
  CHECK(graph.pool_statistics().blocks_in_use == 0);
  static_cast<void>(cudaGetLastError()); // thrust's failed synchronize
  // The graph captures again, with the policy a capture needs.
  graph.capture([&](gc::graph::scope& cap) {
    gctest::thrust_sort(cap, keys.get(), count, gctest::thrust_policy::no_sync);
  });
  std::vector<int> host = random_ints(count, 42);
  const std::vector<int> sorted = replayed_on(host, keys, graph, stream);
  std::sort(host.begin(), host.end());
  CHECK(sorted == host);
}
