// Runtime tests: the graph's lifecycle, with CUDA work the host can execute (memset, memcpy,
// host functions), so that the same tests can also run on the CUDA test double.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gc = graphcap;

namespace {

void CUDART_CB add_one(void* counter) {
  ++*static_cast<int*>(counter);
}

/// A stream, and a counter that the captured host functions increment.
struct counting {
  gctest::stream stream;
  int counter = 0;

  /// One host function on `s` that increments the counter.
  void increment_on(cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter)); }
  /// The capture work of one increment: one node.
  auto increment() {
    return [this](cudaStream_t s) { increment_on(s); };
  }
};

} // namespace

TEST_CASE("is-capturing: false before, true during, false after a capture") {
  gctest::stream stream;
  gc::lean_graph graph;
  CHECK_FALSE(gc::is_capturing(stream));
  graph.capture(stream, [&](gc::lean_graph::scope& cap) {
    CHECK(cap.stream() == static_cast<cudaStream_t>(stream));
    CHECK(gc::is_capturing(stream));
    CHECK(graph.state() == gc::graph_state::capturing);
    static int never_run = 0;
    CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), add_one, &never_run));
  });
  CHECK_FALSE(gc::is_capturing(stream));
  CHECK(graph.state() == gc::graph_state::instantiated);
}

TEST_CASE_METHOD(counting, "captured work runs at each replay, not at capture") {
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) {
    for (int i = 0; i < 10; ++i) {
      increment_on(s);
    }
  });
  CHECK(counter == 0);
  CHECK(graph.node_count() == 10);
  graph.replay(stream);
  stream.synchronize();
  CHECK(counter == 10);
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  CHECK(counter == 30);
  gctest::require_no_last_error();
}

TEST_CASE("memset and memcpy nodes replay with the captured values") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device(4096);
  std::vector<unsigned char> host(4096, 0);
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) { gctest::fill_and_copy(s, device, host, 7); });
  CHECK(host[0] == 0); // nothing ran yet
  graph.replay(stream);
  stream.synchronize();
  CHECK(std::vector<unsigned char>(4096, 7) == host);
}

TEST_CASE_METHOD(counting, "reset, then recapture a different computation into the same graph") {
  gctest::device_buffer<unsigned char> device(1000);
  std::vector<unsigned char> host(1000, 0);
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) { gctest::fill_and_copy(s, device, host, 1); });
  graph.replay(stream);
  stream.synchronize();
  CHECK(host[999] == 1);

  graph.reset();
  CHECK(graph.empty());
  CHECK_THROWS_AS(graph.replay(stream), gc::state_error);

  graph.capture([&](cudaStream_t s) {
    gctest::fill_and_copy(s, device, host, 2);
    increment_on(s);
  });
  graph.replay(stream);
  stream.synchronize();
  CHECK(host[999] == 2);
  CHECK(counter == 1);
}

TEST_CASE_METHOD(counting,
                 "the three callable forms (scope, stream, nothing) and the work result returned") {
  gc::lean_graph with_scope;
  const int answer = with_scope.capture(stream, [&](auto& cap) {
    increment_on(cap.stream());
    return 42;
  });
  CHECK(answer == 42);

  gc::lean_graph with_stream;
  with_stream.capture(stream, [&](cudaStream_t s) { increment_on(s); });

  gc::lean_graph with_nothing;
  with_nothing.capture(stream, [&] { increment_on(stream); });

  with_scope.replay(stream);
  with_stream.replay(stream);
  with_nothing.replay(stream);
  stream.synchronize();
  CHECK(counter == 3);
}

TEST_CASE_METHOD(counting, "the RAII scope: end() finishes, a second end() is a state_error") {
  gc::lean_graph graph;
  auto cap = graph.begin_capture(stream);
  CHECK(cap.active());
  increment_on(cap.stream());
  cap.end();
  CHECK_FALSE(cap.active());
  CHECK_FALSE(gctest::capturing(stream));
  CHECK_THROWS_WITH(cap.end(), gctest::contains("already ended"));
  graph.replay(stream);
  stream.synchronize();
  CHECK(counter == 1);
}

TEST_CASE_METHOD(counting,
                 "a scope destroyed before end() discards the capture and frees the stream") {
  gc::lean_graph graph;
  {
    auto cap = graph.begin_capture(stream);
    increment_on(cap.stream());
  }
  CHECK_FALSE(gctest::capturing(stream));
  CHECK(graph.empty());
  CHECK(counter == 0);
  gctest::require_no_last_error();
  // and the graph captures again
  graph.capture(stream, [&] { increment_on(stream); });
  graph.replay(stream);
  stream.synchronize();
  CHECK(counter == 1);
}

TEST_CASE("an empty capture is valid: zero nodes, and its replay does nothing") {
  gctest::stream stream;
  gc::lean_graph graph;
  graph.capture([](cudaStream_t) {});
  CHECK(graph.node_count() == 0);
  CHECK(graph.state() == gc::graph_state::instantiated);
  REQUIRE_NOTHROW(graph.replay(stream));
  stream.synchronize();
}

TEST_CASE_METHOD(
    counting, "keep_graph: template kept, lazy instantiation at first replay, re-instantiation") {
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(increment());
  CHECK(graph.state() == gc::graph_state::captured);
  CHECK(graph.raw_graph() != nullptr);
  CHECK_THROWS_WITH(graph.raw_exec(), gctest::contains("instantiate()"));

  graph.replay(stream); // instantiates lazily
  stream.synchronize();
  CHECK(counter == 1);
  CHECK(graph.state() == gc::graph_state::instantiated);
  const cudaGraphExec_t first = graph.raw_exec();
  CHECK(first != nullptr);

  graph.instantiate(); // allowed again with keep_graph
  CHECK(graph.raw_exec() != nullptr);
  graph.replay(stream);
  stream.synchronize();
  CHECK(counter == 2);

  std::size_t nodes = 0;
  CUDA_REQUIRE(cudaGraphGetNodes(graph.raw_graph(), nullptr, &nodes));
  CHECK(nodes == graph.node_count());
  gctest::require_no_last_error();
}

TEST_CASE_METHOD(
    counting,
    "without keep_graph: no template after capture, instantiate() twice is a state_error") {
  gc::lean_graph graph;
  graph.capture(increment());
  CHECK(graph.raw_exec() != nullptr);
  CHECK_THROWS_WITH(graph.raw_graph(), gctest::contains("graphcap::keep_graph"));
  CHECK_THROWS_WITH(graph.instantiate(), gctest::contains("graphcap::keep_graph"));
  CHECK_THROWS_AS(graph.debug_dump("never.dot"), gc::state_error);
  graph.replay(stream); // still fine
  stream.synchronize();
  CHECK(counter == 1);
}

TEST_CASE_METHOD(
    counting, "capturing twice without reset is a state_error and the first graph stays usable") {
  gc::lean_graph graph;
  graph.capture(increment());
  CHECK_THROWS_WITH(graph.capture([](cudaStream_t) {}), gctest::contains("call reset() first"));
  CHECK_THROWS_AS(graph.begin_capture(stream), gc::state_error);
  CHECK_FALSE(gctest::capturing(stream));
  graph.replay(stream);
  stream.synchronize();
  CHECK(counter == 1);
}

TEST_CASE_METHOD(counting,
                 "a capture nested in one of the same graph says what reset() then says: end it") {
  // Both messages name one remedy: end the capture in progress (reset() is refused meanwhile).
  gc::lean_graph graph;
  std::string nested;
  std::string reset;
  graph.capture(stream, [&](cudaStream_t) {
    try {
      graph.capture([](cudaStream_t) {});
    } catch (const gc::state_error& e) {
      nested = e.what();
    }
    try {
      graph.reset();
    } catch (const gc::state_error& e) {
      reset = e.what();
    }
  });
  CHECK_THAT(nested, gctest::contains("end the capture in progress first"));
  CHECK_THAT(nested, gctest::contains("do not nest"));
  CHECK_THAT(reset, gctest::contains("end the capture in progress first"));
  CHECK(nested.find("reset()") == std::string::npos);
  CHECK_FALSE(gctest::capturing(stream));
  graph.replay(stream); // the outer capture ended and instantiated
  stream.synchronize();
}

TEST_CASE_METHOD(counting, "upload() prepares the first replay") {
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(increment());
  REQUIRE_NOTHROW(graph.upload(stream)); // instantiates (keep_graph) and uploads
  CHECK(graph.state() == gc::graph_state::instantiated);
  graph.replay(stream);
  stream.synchronize();
  CHECK(counter == 1);
}

TEST_CASE_METHOD(counting, "a moved graph replays and the moved-from graph is empty") {
  gc::lean_graph first;
  first.capture(increment());
  gc::lean_graph second = std::move(first);
  CHECK(first.empty()); // NOLINT(bugprone-use-after-move)
  second.replay(stream);
  gc::lean_graph third;
  third = std::move(second);
  third.replay(stream);
  stream.synchronize();
  CHECK(counter == 2);
}

TEST_CASE("debug_dump writes a DOT file of a multi-stream capture") {
  gctest::stream main_stream;
  gctest::stream side;
  gctest::event fork;
  gctest::event join;
  gctest::device_buffer<unsigned char> a(256);
  gctest::device_buffer<unsigned char> b(256);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(main_stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaEventRecord(fork, s));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, fork, 0));
    CUDA_REQUIRE(cudaMemsetAsync(a.get(), 1, a.bytes(), s));
    CUDA_REQUIRE(cudaMemsetAsync(b.get(), 2, b.bytes(), side));
    CUDA_REQUIRE(cudaEventRecord(join, side));
    CUDA_REQUIRE(cudaStreamWaitEvent(s, join, 0));
  });
  CHECK(graph.node_count() == 2);
  const std::string path = "graphcap_debug_dump_test.dot";
  std::remove(path.c_str());
  graph.debug_dump(path);
  std::ifstream file(path);
  REQUIRE(file.good());
  std::stringstream contents;
  contents << file.rdbuf();
  CHECK_THAT(contents.str(), gctest::contains("digraph"));
  CHECK_THAT(contents.str(), gctest::contains("MEMSET"));
  std::remove(path.c_str());
}
