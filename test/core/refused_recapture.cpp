// Runtime tests (both backends): a refused recapture (or capture) is refused before anything is
// released. The graph keeps its executable, its template and its pool blocks, and replays as
// before: a stream that cannot capture (the legacy default stream, a stream another capture
// runs on), a capture in progress, a policy that refuses (check_capture, core/policy.hpp).
// pool::sleepable's refusal while asleep: test/pool/sleepable.cpp.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;

std::vector<unsigned char> filled(int value) {
  return std::vector<unsigned char>(bytes, static_cast<unsigned char>(value));
}

/// A graph with its pool, captured: one block set to `value` and copied to `host` (two nodes).
struct captured_graph {
  gctest::stream stream;
  std::vector<unsigned char> host = std::vector<unsigned char>(bytes, 0);
  gc::graph graph;
  unsigned char* block = gctest::capture_fill(graph, host, 5);

  /// The graph is as captured: instantiated, two nodes, its block held, and it replays.
  void check_intact() {
    CHECK(graph.state() == gc::graph_state::instantiated);
    CHECK(graph.node_count() == 2);
    CHECK(graph.pool_statistics().blocks_in_use == 1);
    CHECK_FALSE(gctest::capturing(stream));
    std::fill(host.begin(), host.end(), 0);
    graph.replay(stream);
    stream.synchronize();
    CHECK(host == filled(5));
  }
  /// A recapture that works: the same block again, updated in place.
  void check_recapture_works() {
    unsigned char* again = nullptr;
    const gc::update_result result = graph.recapture(stream, [&](gc::graph::scope& cap) {
      again = cap.allocate<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(again, 6, bytes, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(host.data(), again, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    });
    CHECK(result.updated());
    CHECK(again == block);
    graph.replay(stream);
    stream.synchronize();
    CHECK(host == filled(6));
  }
};

auto never_runs(bool& ran) {
  return [&ran](cudaStream_t /*stream*/) { ran = true; };
}

/// A Liveness policy written with the contract's public names that refuses captures while
/// `refusing` is set, and counts its hooks.
struct refusing_policy : gc::policy_base<gc::policy_kind::liveness> {
  static inline bool refusing = false;
  static inline int captures_begun = 0;
  static inline int resets = 0;

  void check_capture() const {
    if (refusing) {
      throw gc::state_error("refusing_policy: no capture now");
    }
  }
  void before_capture(cudaStream_t /*stream*/) noexcept { ++captures_begun; }
  void on_reset() noexcept { ++resets; }
  void add_input(const void* /*pointer*/) noexcept {}
  void exclude(const void* /*pointer*/, std::size_t /*bytes*/) noexcept {}
};
static_assert(gc::policy_that_checks_captures<refusing_policy>);
static_assert(!gc::policy_that_checks_captures<gc::liveness::off>);

} // namespace

TEST_CASE_METHOD(captured_graph, "a recapture on the legacy default stream is refused before "
                                 "anything is released: the graph replays as before") {
  bool ran = false;
  CHECK_THROWS_AS(graph.recapture(cudaStreamLegacy, never_runs(ran)), gc::capture_error);
  CHECK_THROWS_AS(static_cast<void>(graph.begin_recapture(cudaStreamLegacy)), gc::capture_error);
  CHECK_FALSE(ran);
  check_intact();
  check_recapture_works();
}

TEST_CASE_METHOD(captured_graph, "a recapture on a stream another capture runs on is refused "
                                 "before anything is released") {
  bool ran = false;
  gc::lean_graph other;
  {
    auto running = other.begin_capture(stream);
    CHECK_THROWS_AS(graph.recapture(stream, never_runs(ran)), gc::capture_error);
    CHECK(gctest::capturing(stream)); // the other capture goes on
    running.end();
  }
  CHECK_FALSE(ran);
  CHECK(other.node_count() == 0);
  check_intact();
  check_recapture_works();
}

TEST_CASE_METHOD(captured_graph, "a recapture while the graph's own recapture runs is refused, "
                                 "and the running one still updates in place") {
  const cudaGraphExec_t executable = graph.raw_exec();
  {
    auto running = graph.begin_recapture(stream);
    CHECK_THROWS_AS(static_cast<void>(graph.begin_recapture(stream)), gc::state_error);
    CHECK_THROWS_AS(static_cast<void>(graph.begin_recapture()), gc::state_error);
    auto* again = running.allocate<unsigned char>(bytes);
    CHECK(again == block);
    CUDA_REQUIRE(cudaMemsetAsync(again, 5, bytes, running.stream()));
    CUDA_REQUIRE(
        cudaMemcpyAsync(host.data(), again, bytes, cudaMemcpyDeviceToHost, running.stream()));
    running.end();
    CHECK(running.update().updated());
  }
  CHECK(graph.raw_exec() == executable);
  check_intact();
}

TEST_CASE("a policy's check_capture refuses a capture or a recapture before anything happens") {
  using refusing_graph =
      gc::basic_graph<gc::mode::global, gc::pool::private_pool, gc::annot::off, refusing_policy>;
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  refusing_graph graph;
  refusing_graph fresh; // destroyed after the counts are checked (its on_reset)
  refusing_policy::refusing = false;
  static_cast<void>(gctest::capture_fill(graph, host, 3));
  refusing_policy::captures_begun = 0;
  refusing_policy::resets = 0;
  refusing_policy::refusing = true;
  bool ran = false;
  SECTION("recapture") {
    CHECK_THROWS_WITH(graph.recapture(stream, never_runs(ran)), gctest::contains("no capture now"));
  }
  SECTION("begin_recapture on the side stream") {
    CHECK_THROWS_AS(static_cast<void>(graph.begin_recapture()), gc::state_error);
  }
  SECTION("a fresh capture into another graph") {
    CHECK_THROWS_AS(fresh.capture(stream, never_runs(ran)), gc::state_error);
    CHECK_THROWS_AS(fresh.capture(never_runs(ran)), gc::state_error);
    CHECK(fresh.empty());
    CHECK(fresh.pool_statistics().reserved_bytes == 0);
  }
  refusing_policy::refusing = false;
  CHECK_FALSE(ran);
  CHECK(refusing_policy::captures_begun == 0); // no hook ran: nothing to undo
  CHECK(refusing_policy::resets == 0);
  CHECK(graph.state() == gc::graph_state::instantiated);
  CHECK(graph.node_count() == 2);
  CHECK(graph.pool_statistics().blocks_in_use == 1);
  CHECK_FALSE(gctest::capturing(stream));
  std::fill(host.begin(), host.end(), 0);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(3));
}
