// Runtime tests of liveness::free_watch (both backends; built into the watched liveness binaries,
// which link graphcap::free_watch): the watch is shared, frees made while nobody watched are still
// caught, and a stopped or moved-from watch trusts nothing.
#include <graphcap/free_watch.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "liveness_helpers.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace gc = graphcap;

namespace {

using checked_graph = gc::graph_with<gc::liveness::check>;

constexpr std::size_t watched_bytes = 4096;

void* some_device_memory() {
  void* memory = nullptr;
  CUDA_REQUIRE(cudaMalloc(&memory, watched_bytes));
  return memory;
}

/// A graph that sets `target`'s bytes: `target` is its one input.
void capture_memset(checked_graph& graph, cudaStream_t stream, void* target) {
  graph.capture(
      stream, [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(target, 3, watched_bytes, s)); });
}

} // namespace

TEST_CASE("free_watch: two watches share one, and the second outlives the first") {
  gc::liveness::free_watch first;
  INFO(first.reason());
  REQUIRE(first.active());
  CHECK(first.reason().empty());
  gc::liveness::free_watch second;
  REQUIRE(second.active());
  gctest::stream stream;
  void* target = some_device_memory();
  checked_graph graph;
  capture_memset(graph, stream, target);
  graph.replay(stream);
  first.stop();
  CHECK_FALSE(first.active());
  graph.replay(stream);
  CUDA_REQUIRE(cudaFree(target)); // the second watch still sees it
  CHECK_THROWS_AS(graph.replay(stream), gc::liveness_error);
  gctest::require_no_last_error();
}

TEST_CASE("free_watch: a free made while no watch ran is caught under the next watch") {
  gctest::stream stream;
  void* target = some_device_memory();
  checked_graph graph;
  capture_memset(graph, stream, target);
  {
    const gc::liveness::free_watch watch;
    REQUIRE(watch.active());
    graph.replay(stream);
    graph.replay(stream);
  }
  stream.synchronize();
  CUDA_REQUIRE(cudaFree(target)); // nobody watches: no callback counts it
  const gc::liveness::free_watch watch;
  REQUIRE(watch.active());
  const std::string refusal = gctest::refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(gctest::hex(target) + " freed: memset destination"));
  gctest::require_no_last_error();
}

TEST_CASE("free_watch: a moved-from watch is inactive and says so, the moved-to one watches") {
  gc::liveness::free_watch original;
  REQUIRE(original.active());
  gc::liveness::free_watch moved{std::move(original)};
  CHECK(moved.active());
  CHECK_FALSE(original.active()); // NOLINT(bugprone-use-after-move): what a move leaves
  CHECK_THAT(original.reason(), gctest::contains("moved from"));
  gctest::stream stream;
  void* target = some_device_memory();
  checked_graph graph;
  capture_memset(graph, stream, target);
  graph.replay(stream);
  graph.replay(stream);
  CUDA_REQUIRE(cudaFree(target));
  CHECK_THROWS_AS(graph.replay(stream), gc::liveness_error);
  moved = gc::liveness::free_watch{};
  CHECK(moved.active());
}

TEST_CASE("free_watch: replays skip the full check while nothing is freed, and make it after a "
          "free") {
  const gc::liveness::free_watch watch;
  INFO(watch.reason());
  REQUIRE(watch.active());
  gctest::stream stream;
  void* target = some_device_memory();
  checked_graph graph;
  capture_memset(graph, stream, target);
  const auto full_checks = [&] { return graph.liveness_policy().full_checks(); };
  const std::uint64_t before = full_checks();
  graph.replay(stream);
  CHECK(full_checks() == before + 1); // the first replay of a capture checks in full
  for (int i = 0; i < 10; ++i) {
    graph.replay(stream);
  }
  CHECK(full_checks() == before + 1);           // nothing freed: one load each, no driver query
  CUDA_REQUIRE(cudaFree(some_device_memory())); // unrelated memory
  graph.replay(stream);
  CHECK(full_checks() == before + 2); // a free: the next replay checks in full again
  graph.replay(stream);
  graph.replay(stream);
  CHECK(full_checks() == before + 2);
  stream.synchronize();
  CUDA_REQUIRE(cudaFree(target));
  CHECK_THROWS_AS(graph.replay(stream), gc::liveness_error);
  CHECK(full_checks() == before + 3);
  gctest::require_no_last_error();
}
