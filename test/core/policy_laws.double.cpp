// The laws of core/policy.hpp, for every shipped policy and for one written with the public
// names of that header only (policy_base, policy_kind): each configuration goes through
// the whole lifecycle (capture, failed capture, invalidated capture, recapture, reset, move,
// destruction) on the CUDA test double, which can count what is left alive and inject failures.
// After every step: no stream capturing, the state the step promises, and nothing leaked.
#include <graphcap/annotations.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;

// gctest::live_objects, what the double holds alive, is the leak check of every law.
using gctest::live_objects;

/// Law 3 after a failed capture: no template or executable is left (a pool may keep what it
/// caches across captures: slabs, its stream, its completion event).
void require_no_capture_left(const live_objects& before) {
  const live_objects now;
  CHECK(now.graphs == before.graphs);
  CHECK(now.execs == before.execs);
}

/// Once the graph is gone: nothing it made is left.
void require_nothing_left(const live_objects& before) {
  const live_objects now;
  CHECK(now.streams == before.streams);
  CHECK(now.events == before.events);
  CHECK(now.graphs == before.graphs);
  CHECK(now.execs == before.execs);
  CHECK(now.allocations == before.allocations);
}

/// A configuration under test and how to construct it.
template <class Graph>
struct configuration {
  std::optional<gctest::memory_pool> user_pool; // pool::user's memory pool

  Graph make() {
    if constexpr (std::is_same_v<typename Graph::pool_type, gc::pool::user>) {
      if (!user_pool) {
        user_pool.emplace();
      }
      return Graph{static_cast<cudaMemPool_t>(*user_pool)};
    } else {
      return Graph{};
    }
  }
};

/// The work every configuration captures: a memset into the caller's buffer, and a temporary
/// from the pool where the pool allocates, tagged and declared as the policies allow.
template <class Scope>
void work(Scope& cap, void* target, int value) {
  auto region = cap.mark("law");
  if constexpr (Scope::pool_type::can_allocate) {
    auto* temporary = cap.template allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(temporary, value, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(target, temporary, bytes, cudaMemcpyDeviceToDevice, cap.stream()));
  } else {
    CUDA_REQUIRE(cudaMemsetAsync(target, value, bytes, cap.stream()));
  }
}

template <class Graph>
void require_first_byte(const gctest::device_buffer<unsigned char>& buffer, int value) {
  unsigned char first = 0;
  CUDA_REQUIRE(cudaMemcpy(&first, buffer.get(), 1, cudaMemcpyDeviceToHost));
  REQUIRE(first == value);
}

} // namespace

// Every policy switched on alone, and all of them together (aliases: the macro splits commas).
using everything_on =
    gc::graph_with<gc::pool::private_pool, gc::annot::on, gc::liveness::check, gc::mode::relaxed>;
using thread_local_mode = gc::graph_with<gc::mode::thread_local_>;
using relaxed_mode = gc::graph_with<gc::mode::relaxed>;
using private_pool = gc::graph_with<gc::pool::private_pool>;
using shared_pool = gc::graph_with<gc::pool::shared>;
using user_pool = gc::graph_with<gc::pool::user>;
using sleepable_pool = gc::graph_with<gc::pool::sleepable>;
using memory_nodes = gc::graph_with<gc::pool::graph_memory_nodes>;
using annotated = gc::graph_with<gc::annot::on>;
using checked = gc::graph_with<gc::liveness::check>;

/// A Liveness policy as a user writes one, from <graphcap/core/policy.hpp>'s public names only:
/// it counts the hooks (law 1: every before_capture is followed by exactly one abort or end).
class counting_liveness : public gc::policy_base<gc::policy_kind::liveness> {
public:
  void before_capture(cudaStream_t /*stream*/) noexcept { ++begun_; }
  void after_capture_end(cudaGraph_t /*graph*/) noexcept { ++ended_; }
  void on_capture_abort() noexcept { ++aborted_; }
  void add_input(const void* /*pointer*/) {}
  void add_input(const void* /*pointer*/, const std::weak_ptr<const void>& /*token*/) {}
  void exclude(const void* /*base*/, std::size_t /*bytes*/) {}
  /// Law 1, pairing: every capture begun has ended or been aborted.
  [[nodiscard]] bool paired() const noexcept { return begun_ == ended_ + aborted_; }
  [[nodiscard]] int begun() const noexcept { return begun_; }

private:
  int begun_ = 0;
  int ended_ = 0;
  int aborted_ = 0;
};
static_assert(gc::liveness_policy<counting_liveness>);
static_assert(!gc::liveness_across_bodies<counting_liveness>); // optional: not offered
using user_written =
    gc::basic_graph<gc::mode::global, gc::pool::private_pool, gc::annot::off, counting_liveness>;

TEMPLATE_TEST_CASE("every shipped policy keeps the lifecycle laws", "[laws]", gc::lean_graph,
                   thread_local_mode, relaxed_mode, private_pool, shared_pool, user_pool,
                   sleepable_pool, memory_nodes, annotated, checked, everything_on, user_written) {
  using graph_type = TestType;
  using scope_type = typename graph_type::scope;
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  configuration<graph_type> config;
  std::optional<graph_type> graph{config.make()};
  const live_objects before; // with the configuration's own objects (the user's pool) made

  SECTION("capture, replay, reset: back to empty, no template or executable left") {
    graph->capture(stream, [&](scope_type& cap) { work(cap, buffer.get(), 1); });
    REQUIRE(graph->state() == gc::graph_state::instantiated);
    REQUIRE_FALSE(gctest::capturing(stream));
    graph->replay(stream);
    require_first_byte<graph_type>(buffer, 1);
    graph->reset();
    REQUIRE(graph->empty());
    require_no_capture_left(before);
  }
  SECTION("a capture whose work throws: the exception propagates, nothing is left capturing") {
    REQUIRE_THROWS_AS(graph->capture(stream,
                                     [&](scope_type& cap) {
                                       work(cap, buffer.get(), 2);
                                       throw std::runtime_error("work failed");
                                     }),
                      std::runtime_error);
    REQUIRE(graph->empty());
    REQUIRE_FALSE(gctest::capturing(stream));
    require_no_capture_left(before);
    graph->capture(stream, [&](scope_type& cap) { work(cap, buffer.get(), 3); }); // usable again
    graph->replay(stream);
    require_first_byte<graph_type>(buffer, 3);
  }
  SECTION("an invalidated capture: capture_error, empty, nothing left capturing or alive") {
    cuda_double::fail_call("cudaStreamEndCapture", cudaErrorStreamCaptureInvalidated);
    REQUIRE_THROWS_AS(graph->capture(stream, [&](scope_type& cap) { work(cap, buffer.get(), 4); }),
                      gc::capture_error);
    REQUIRE(graph->empty());
    REQUIRE_FALSE(gctest::capturing(stream));
    require_no_capture_left(before);
    gctest::require_no_last_error();
  }
  SECTION("recapture with the same structure updates in place, on the same addresses") {
    graph->capture(stream, [&](scope_type& cap) { work(cap, buffer.get(), 5); });
    const gc::update_result result = graph->recapture(
        stream, [&](typename graph_type::recapture_scope& cap) { work(cap, buffer.get(), 6); });
    if constexpr (std::is_same_v<typename graph_type::pool_type, gc::pool::graph_memory_nodes>) {
      REQUIRE_FALSE(result.updated()); // CUDA cannot update memory nodes: instantiated anew
    } else {
      REQUIRE(result.updated());
    }
    graph->replay(stream);
    require_first_byte<graph_type>(buffer, 6);
  }
  SECTION("a recapture whose work takes the plain scope (one step for both) also updates") {
    graph->capture(stream, [&](scope_type& cap) { work(cap, buffer.get(), 7); });
    const gc::update_result result =
        graph->recapture(stream, [&](scope_type& cap) { work(cap, buffer.get(), 8); });
    REQUIRE(result.outcome != gc::update_outcome::instantiated);
    graph->replay(stream);
    require_first_byte<graph_type>(buffer, 8);
  }
  SECTION("move: the moved-to graph replays, the moved-from one is empty and reusable") {
    graph->capture(stream, [&](scope_type& cap) { work(cap, buffer.get(), 9); });
    graph_type moved{std::move(*graph)};
    REQUIRE(graph->empty());
    moved.replay(stream);
    require_first_byte<graph_type>(buffer, 9);
    *graph = std::move(moved);
    REQUIRE(moved.empty());
    graph->replay(stream);
  }
  SECTION("destruction releases the executable, the template, the side stream and the pool") {
    graph->capture([&](scope_type& cap) { work(cap, buffer.get(), 10); }); // on the side stream
    graph->replay(stream);
    CUDA_REQUIRE(cudaStreamSynchronize(stream));
    graph.reset();
    require_nothing_left(before);
  }
  if constexpr (std::is_same_v<graph_type, user_written>) {
    if (graph) {
      CHECK(graph->liveness_policy().paired()); // law 1, seen from the policy's side
    }
  }
  if (graph) {
    graph.reset();
  }
  require_nothing_left(before);
  REQUIRE_FALSE(gctest::capturing(stream));
}

namespace {

/// A Liveness policy whose hook throws right after the capture began (as a user's policy may).
struct throws_after_begin : gc::policy_base<gc::policy_kind::liveness> {
  // NOLINTNEXTLINE(readability-convert-member-functions-to-static): a policy's hook
  void after_capture_begin(cudaStream_t /*stream*/) {
    throw std::runtime_error("the policy failed after the capture began");
  }
  void add_input(const void* /*pointer*/) {}
  void add_input(const void* /*pointer*/, const std::weak_ptr<const void>& /*token*/) {}
  void exclude(const void* /*base*/, std::size_t /*bytes*/) {}
};

} // namespace

TEST_CASE("a policy hook that throws right after the capture began leaves no stream capturing") {
  cuda_double::reset();
  gctest::stream stream;
  gc::basic_graph<gc::mode::global, gc::pool::private_pool, gc::annot::off, throws_after_begin>
      graph;
  const live_objects before;
  REQUIRE_THROWS_WITH(graph.begin_capture(stream),
                      gctest::contains("the policy failed after the capture began"));
  REQUIRE_FALSE(gctest::capturing(stream));
  REQUIRE(graph.empty());
  require_no_capture_left(before);
  gctest::require_no_last_error();
}
