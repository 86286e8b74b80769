// replay_loop (graphcap/replay_loop.hpp): n replays in order, unrolled into copies of the graph
// where that can be done, on both backends. Each replay runs a host function that logs its
// iteration, so the tests see how many ran and in which order.
#include <graphcap/graphcap.hpp>
#include <graphcap/replay_loop.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace gc = graphcap;

namespace {

/// What the captured host function appends to: one entry per iteration, in order.
struct iteration_log {
  std::vector<int> entries;
  int tag = 1;
};

void CUDART_CB log_iteration(void* log) {
  auto* target = static_cast<iteration_log*>(log);
  target->entries.push_back(target->tag);
}

template <class Graph>
void capture_logging(Graph& graph, const gctest::stream& stream, iteration_log& log) {
  graph.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, log_iteration, &log)); });
}

} // namespace

TEST_CASE("replay_loop runs the graph n times in order, in copies of it") {
  gctest::stream stream;
  iteration_log log;
  gc::lean_graph graph{gc::keep_graph};
  capture_logging(graph, stream, log);
  gc::replay_loop loop{graph, {.max_copies = 4}};
  CHECK(loop.copies() == 4);
  CHECK(loop.unrolled_reason().empty());
  for (const std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{5}, std::size_t{11}}) {
    log.entries.clear();
    loop.replay(stream, n);
    stream.synchronize();
    CHECK(log.entries.size() == n);
  }
  loop.replay(stream, 0);
  stream.synchronize();
  CHECK(log.entries.size() == 11); // zero iterations: nothing ran
}

TEST_CASE("replay_loop follows a recapture and keeps the order of iterations") {
  gctest::stream stream;
  iteration_log log;
  gc::lean_graph graph{gc::keep_graph};
  capture_logging(graph, stream, log);
  gc::replay_loop loop{graph, {.max_copies = 3}};
  loop.replay(stream, 7);
  stream.synchronize(); // the host functions read the tag when they run
  log.tag = 2;          // what the next iterations log: the same host function, another tag
  loop.replay(stream, 2);
  stream.synchronize();
  CHECK(log.entries == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 2, 2});
  iteration_log second;
  const gc::update_result result = graph.recapture(
      stream, [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, log_iteration, &second)); });
  CHECK(result.updated());
  loop.replay(stream, 5);
  stream.synchronize();
  CHECK(second.entries.size() == 5);
  CHECK(log.entries.size() == 9);
}

TEST_CASE("replay_loop replays without unrolling where it cannot unroll, and says why") {
  gctest::stream stream;
  iteration_log log;
  SECTION("no template kept") {
    gc::lean_graph graph;
    capture_logging(graph, stream, log);
    gc::replay_loop loop{graph};
    loop.replay(stream, 6);
    stream.synchronize();
    CHECK(log.entries.size() == 6);
    CHECK(loop.copies() == 1);
    CHECK_THAT(std::string(loop.unrolled_reason()), gctest::contains("graphcap::keep_graph"));
  }
  SECTION("graph memory nodes") {
    gc::graph_with<gc::pool::graph_memory_nodes> graph{gc::keep_graph};
    capture_logging(graph, stream, log);
    gc::replay_loop loop{graph};
    loop.replay(stream, 3);
    stream.synchronize();
    CHECK(log.entries.size() == 3);
    CHECK_THAT(std::string(loop.unrolled_reason()), gctest::contains("memory nodes"));
  }
  SECTION("over the node cap") {
    gc::lean_graph graph{gc::keep_graph};
    capture_logging(graph, stream, log);
    gc::replay_loop loop{graph, {.max_copies = 64, .max_nodes = 1}};
    loop.replay(stream, 2);
    stream.synchronize();
    CHECK(log.entries.size() == 2);
    CHECK_THAT(std::string(loop.unrolled_reason()), gctest::contains("node cap"));
  }
}

TEST_CASE("replay_loop before a capture is the graph's state_error") {
  gctest::stream stream;
  gc::lean_graph graph{gc::keep_graph};
  gc::replay_loop loop{graph};
  CHECK_THROWS_AS(loop.replay(stream, 3), gc::state_error);
  CHECK(loop.copies() == 1);
}

TEST_CASE("replay_loop refuses a negative or absurd count before launching anything") {
  gctest::stream stream;
  iteration_log log;
  gc::lean_graph graph{gc::keep_graph};
  capture_logging(graph, stream, log);
  gc::replay_loop loop{graph, {.max_copies = 4}};
  using loop_type = decltype(loop);
  const auto refused = [&](auto n, const char* why) {
    INFO("count " << n);
    CHECK_THROWS_AS(loop.replay(stream, n), std::invalid_argument);
    CHECK_THROWS_WITH(loop.replay(stream, n), gctest::contains(why));
  };
  refused(-1, "which is negative");
  refused(-100L, "which is negative");
  refused(static_cast<short>(-3), "which is negative");
  refused(static_cast<std::size_t>(-1), "over replay_loop::max_count");
  refused(loop_type::max_count + 1, "over replay_loop::max_count");
  stream.synchronize();
  CHECK(log.entries.empty()); // nothing was launched
  loop.replay(stream, 3);     // signed counts that fit are taken
  loop.replay(stream, 2U);
  stream.synchronize();
  CHECK(log.entries.size() == 5);
}
