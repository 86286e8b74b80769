// GPU tests: recapture with update on real kernels (parameter changes that CUDA updates in place,
// a kernel function change it cannot), and a graph cache keyed by size.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"

namespace gc = graphcap;

namespace {
constexpr std::size_t n = 1000;
}

TEST_CASE("kernel parameters changed by a recapture: updated in place, replays follow them") {
  gctest::stream stream;
  gctest::device_buffer<float> first(n);
  gctest::device_buffer<float> second(n);
  gc::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_fill(s, first.get(), 1.0F, n);
    gctest::launch_add_scalar(s, first.get(), 2.0F, n);
  });
  const cudaGraphExec_t exec = graph.raw_exec();
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(first.get(), n) == 3000.0);
  // Another value and another buffer: the same kernels, so CUDA updates the graph in place.
  const gc::update_result result = graph.recapture(stream, [&](cudaStream_t s) {
    gctest::launch_fill(s, second.get(), 5.0F, n);
    gctest::launch_add_scalar(s, second.get(), 4.0F, n);
  });
  INFO(result.reason);
  CHECK(result.updated());
  CHECK(graph.raw_exec() == exec);
  CUDA_REQUIRE(cudaMemset(first.get(), 0, n * sizeof(float)));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(second.get(), n) == 9000.0);
  CHECK(gctest::sum(first.get(), n) == 0.0); // the old parameters are gone
  gctest::require_no_last_error();
}

TEST_CASE("a recapture that launches another kernel function is instantiated anew") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  gc::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_fill(s, data.get(), 1.0F, n); });
  const gc::update_result result = graph.recapture(
      stream, [&](cudaStream_t s) { gctest::launch_add_scalar(s, data.get(), 1.0F, n); });
  INFO(result.reason);
  // CUDA 12+ may update a kernel node to another function of the same context; either way the
  // replay must run the new kernel, and a refusal must say why.
  if (!result.updated()) {
    CHECK(result.outcome == gc::update_outcome::reinstantiated);
    CHECK_FALSE(result.reason.empty());
  }
  CUDA_REQUIRE(cudaMemset(data.get(), 0, n * sizeof(float)));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 2000.0);
  gctest::require_no_last_error();
}

TEST_CASE("a graph cache keyed by size replays the right graph for each size") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  gc::graph_cache<std::size_t> cache{{.capacity = 3, .warmup_runs = 1}};
  for (int round = 0; round < 4; ++round) {
    for (const std::size_t size : {std::size_t{10}, std::size_t{100}, std::size_t{1000}}) {
      CUDA_REQUIRE(cudaMemsetAsync(data.get(), 0, n * sizeof(float), stream));
      cache.replay(size, stream, [&, size](cudaStream_t s) {
        gctest::launch_add_scalar(s, data.get(), 1.0F, size);
      });
      stream.synchronize();
      // A first use also ran the work once eagerly (the warm-up) before the replay.
      const double expected = static_cast<double>(size) * (round == 0 ? 2.0 : 1.0);
      REQUIRE(gctest::sum(data.get(), n) == expected);
    }
  }
  CHECK(cache.statistics().misses == 3);
  CHECK(cache.statistics().hits == 9);
  gctest::require_no_last_error();
}
