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

TEST_CASE("replay_loop copies a graph flat by default, and says so") {
  gctest::stream stream;
  iteration_log log;
  gc::lean_graph graph{gc::keep_graph};
  capture_logging(graph, stream, log);
  gc::replay_loop loop{graph, {.max_copies = 8}};
  CHECK(loop.form() == gc::replay_loop_form::flat);
  CHECK_THAT(std::string(loop.form_reason()), gctest::contains("automatic"));
  CHECK(loop.copies() == 8);
  CHECK(loop.unrolled_reason().empty());
  CHECK(gc::to_string(loop.form()) == "flat");
}

TEST_CASE("replay_loop runs n iterations in each form and each way of running the rest") {
  using form = gc::replay_loop_form;
  using remainder = gc::replay_loop_remainder;
  gctest::stream stream;
  iteration_log log;
  gc::lean_graph graph{gc::keep_graph};
  capture_logging(graph, stream, log);
  for (const form asked : {form::automatic, form::flat, form::child_graphs, form::replays}) {
    for (const remainder rest : {remainder::binary, remainder::replays}) {
      for (const std::size_t copies : {std::size_t{4}, std::size_t{5}, std::size_t{64}}) {
        gc::replay_loop loop{graph, {.max_copies = copies, .form = asked, .remainder = rest}};
        const form expected = asked == form::automatic ? form::flat : asked;
        INFO("form " << gc::to_string(asked) << ", copies " << copies);
        CHECK(loop.form() == expected);
        CHECK(loop.copies() == (expected == form::replays ? 1 : copies));
        for (std::size_t n = 0; n <= 23; ++n) {
          log.entries.clear();
          log.tag = static_cast<int>(n);
          loop.replay(stream, n);
          stream.synchronize();
          CHECK(log.entries == std::vector<int>(n, static_cast<int>(n)));
        }
        log.entries.clear();
        loop.replay(stream, 130); // twice the 64 copies and two more
        stream.synchronize();
        CHECK(log.entries.size() == 130);
      }
    }
  }
}

TEST_CASE("replay_loop copies forks, joins, memsets and events flat, edges and order kept") {
  gctest::stream stream;
  gctest::stream side;
  gctest::event forked;
  gctest::event joined;
  gctest::event marker;
  gctest::device_buffer<unsigned char> buffer(64);
  iteration_log first;
  iteration_log second;
  second.tag = 2;
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 7, buffer.bytes(), s));
    CUDA_REQUIRE(cudaEventRecord(forked, s));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, forked, 0));
    CUDA_REQUIRE(cudaLaunchHostFunc(s, log_iteration, &first));
    CUDA_REQUIRE(cudaLaunchHostFunc(side, log_iteration, &second));
    CUDA_REQUIRE(cudaEventRecord(joined, side));
    CUDA_REQUIRE(cudaStreamWaitEvent(s, joined, 0));
    CUDA_REQUIRE(cudaEventRecordWithFlags(marker, s, cudaEventRecordExternal));
  });
  REQUIRE(graph.node_count() == 4); // memset, two host nodes, the external event record
  gc::replay_loop loop{graph, {.max_copies = 4}};
  CHECK(loop.form() == gc::replay_loop_form::flat);
  loop.replay(stream, 11);
  stream.synchronize();
  CHECK(first.entries.size() == 11);
  CHECK(second.entries.size() == 11);
  std::vector<unsigned char> bytes(buffer.bytes());
  CUDA_REQUIRE(cudaMemcpy(bytes.data(), buffer.get(), bytes.size(), cudaMemcpyDeviceToHost));
  CHECK(bytes == std::vector<unsigned char>(64, 7));
  CHECK(cudaEventQuery(marker) == cudaSuccess);
}
