// The fault sweep of captures without bodies, for the core configurations (annot::on:
// annotation_fault_sweep.cpp): each scenario of flat_sweep.hpp (capture, replay, reset and
// teardown; keep_graph with instantiate and upload; an abandoned RAII scope; an exception in the
// work; replay_loop) runs once cleanly, then once for each CUDA call it made, that call failing.
// What each case must show, and the failures absorbed by design in each step: flat_sweep.hpp.
#include "flat_sweep.hpp"

#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <thread>

namespace gc = graphcap;
using flat_sweep::bytes;
using flat_sweep::sweep;

TEST_CASE("fault sweep: lean_graph") {
  sweep<gc::lean_graph>("lean_graph");
}

TEST_CASE("fault sweep: graph (private pool)") {
  sweep<gc::graph>("graph (private pool)");
}

TEST_CASE("fault sweep: liveness check with a private pool") {
  sweep<gc::graph_with<gc::liveness::check, gc::pool::private_pool>>(
      "liveness check with a private pool");
}

TEST_CASE("fault sweep: liveness check in mode thread_local_") {
  sweep<gc::graph_with<gc::liveness::check, gc::mode::thread_local_>>(
      "liveness check in mode thread_local_");
}

TEST_CASE("fault sweep: shared pool") {
  sweep<gc::graph_with<gc::pool::shared>>("shared pool");
}

TEST_CASE("fault sweep: user pool") {
  sweep<gc::graph_with<gc::pool::user>>("user pool");
}

TEST_CASE("fault sweep: graph memory nodes in mode relaxed") {
  sweep<gc::graph_with<gc::pool::graph_memory_nodes, gc::mode::relaxed>>(
      "graph memory nodes in mode relaxed");
}

namespace {

/// A fresh double, then a kept lean graph of one memset (the replay_loop cases below).
struct fresh_double_first {
  fresh_double_first() { cuda_double::reset(); }
};
struct kept_memset_graph : fresh_double_first {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer{16};
  gc::lean_graph graph{gc::keep_graph};
  kept_memset_graph() {
    graph.capture(stream, [&](cudaStream_t s) {
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, buffer.bytes(), s));
    });
  }
};

} // namespace

// A replay_loop whose unrolled executable failed to build used to take itself for built: it
// never tried again, replayed the graph n times and reported no reason (copies() 1, reason "").
TEST_CASE("replay_loop: a build that failed is tried again at the next replay") {
  kept_memset_graph setup;
  gctest::stream& stream = setup.stream;
  gc::lean_graph& graph = setup.graph;
  graph.instantiate();
  gc::replay_loop loop{graph, {.max_copies = 2}};
  cuda_double::fail_call("cudaGraphInstantiateWithFlags", cudaErrorMemoryAllocation); // the loop's
  CHECK_THROWS_AS(loop.replay(stream, 4), gc::cuda_error);
  loop.replay(stream, 4);
  CHECK(loop.copies() == 2);
  CHECK(loop.unrolled_reason().empty());
}

// A child-graph node CUDA fails to add for another reason than a graph it cannot take
// (cudaErrorNotSupported) used to be taken for that refusal: the loop silently stopped unrolling.
TEST_CASE("replay_loop: a failure to add a copy is a cuda_error, not a refusal") {
  kept_memset_graph setup;
  gctest::stream& stream = setup.stream;
  gc::lean_graph& graph = setup.graph;
  gc::replay_loop loop{graph, {.max_copies = 2, .form = gc::replay_loop_form::child_graphs}};
  cuda_double::fail_call("cudaGraphAddChildGraphNode", cudaErrorUnknown);
  CHECK_THROWS_WITH(loop.replay(stream, 4),
                    gctest::contains("cudaGraphAddChildGraphNode failed: cudaErrorUnknown"));
  gctest::require_no_last_error();
  loop.replay(stream, 4);
  CHECK(loop.copies() == 2);
  CHECK(loop.form() == gc::replay_loop_form::child_graphs);
}

// The flat form: a copy CUDA fails to make for another reason than a refusal is a cuda_error
// too; a refusal (cudaErrorNotSupported) makes the loop chain child graphs instead, and say why.
TEST_CASE("replay_loop: a flat copy that fails is a cuda_error, one refused falls back") {
  kept_memset_graph setup;
  gctest::stream& stream = setup.stream;
  gc::lean_graph& graph = setup.graph;
  SECTION("a failure") {
    gc::replay_loop loop{graph, {.max_copies = 2}};
    cuda_double::fail_call("cudaGraphAddMemsetNode", cudaErrorUnknown);
    CHECK_THROWS_WITH(loop.replay(stream, 4),
                      gctest::contains("cudaGraphAddMemsetNode failed: cudaErrorUnknown"));
    gctest::require_no_last_error();
    loop.replay(stream, 4);
    CHECK(loop.form() == gc::replay_loop_form::flat);
  }
  SECTION("a refusal") {
    gc::replay_loop loop{graph, {.max_copies = 2}};
    cuda_double::fail_call("cudaGraphAddMemsetNode", cudaErrorNotSupported);
    loop.replay(stream, 4);
    gctest::require_no_last_error();
    CHECK(loop.form() == gc::replay_loop_form::child_graphs);
    CHECK_THAT(std::string(loop.form_reason()), gctest::contains("cudaErrorNotSupported"));
  }
}

// The rest of n / copies() runs as one launch per bit (executables of 2, 4, ... copies), or as
// replays of the graph where asked.
TEST_CASE("replay_loop: the rest runs in a launch per bit, or in replays") {
  kept_memset_graph setup;
  gctest::stream& stream = setup.stream;
  gc::lean_graph& graph = setup.graph;
  const auto launches = [&](gc::replay_loop_remainder rest) {
    gc::replay_loop loop{graph, {.max_copies = 8, .remainder = rest}};
    loop.replay(stream, 24); // warm: builds what 24 needs
    cuda_double::clear_call_counts();
    loop.replay(stream, 24); // the graph once, 8 copies twice, then 7 left
    return cuda_double::calls("cudaGraphLaunch");
  };
  CHECK(launches(gc::replay_loop_remainder::binary) == 1 + 2 + 3);  // 7 = 4 + 2 + 1
  CHECK(launches(gc::replay_loop_remainder::replays) == 1 + 2 + 7); // 7 replays
}

// ---- errors docs/errors.md lists that no other test provokes -------------------------------

TEST_CASE("allocate() after the scope ended is a state_error") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph graph;
  auto cap = graph.begin_capture(stream);
  cap.end();
  CHECK_THROWS_AS(static_cast<void>(cap.allocate<float>(4)), gc::state_error);
  CHECK_THROWS_WITH(static_cast<void>(cap.allocate<float>(4)),
                    gctest::contains("this capture scope has ended"));
}

TEST_CASE("reset() while a scope is open is a state_error and the capture goes on") {
  cuda_double::reset();
  gctest::stream stream;
  gc::lean_graph graph;
  auto cap = graph.begin_capture(stream);
  CHECK_THROWS_WITH(graph.reset(), gctest::contains("end the capture"));
  CHECK(gctest::capturing(stream));
  cap.end();
  CHECK(graph.state() == gc::graph_state::instantiated);
}

TEST_CASE("an element count whose byte size overflows is an out_of_memory_error") {
  cuda_double::reset();
  gc::graph graph;
  CHECK_THROWS_WITH(graph.capture([](gc::graph::scope& cap) {
    static_cast<void>(cap.allocate<double>(~std::size_t{0} / 4));
  }),
                    gctest::contains("overflows size_t"));
  CHECK(graph.empty());
  CHECK(graph.pool_statistics().blocks_in_use == 0);
}

TEST_CASE("end() on another thread: capture_error, the capture goes on and ends on its thread") {
  cuda_double::reset();
  gctest::stream stream;
  gc::lean_graph graph;
  auto cap = graph.begin_capture(stream);
  cudaError_t seen = cudaSuccess;
  std::thread other([&] {
    try {
      cap.end();
    } catch (const gc::capture_error& failure) {
      seen = failure.code();
    }
  });
  other.join();
  CHECK(seen == cudaErrorStreamCaptureWrongThread);
  CHECK(cap.active());
  CHECK(gctest::capturing(stream));
  cap.end();
  CHECK(graph.state() == gc::graph_state::instantiated);
}

TEST_CASE("graphcap::is_capturing reports a failed query as cuda_error") {
  cuda_double::reset();
  gctest::stream stream;
  cuda_double::fail_call("cudaStreamIsCapturing", cudaErrorUnknown);
  CHECK_THROWS_WITH(static_cast<void>(gc::is_capturing(stream)),
                    gctest::contains("cudaStreamIsCapturing failed: cudaErrorUnknown"));
  gctest::require_no_last_error();
}

// CUDA frees an allocation that the graph does not free only at the graph's next launch, and
// destroying the graph frees nothing ("Graph destruction does not automatically free any live
// graph-allocated memory", CUDA programming guide): pool::graph_memory_nodes frees it on reset.
TEST_CASE("graph_memory_nodes: a block the capture does not free is freed with the graph",
          "[graph_memory_nodes]") {
  cuda_double::reset();
  gctest::stream stream;
  {
    gc::graph_with<gc::pool::graph_memory_nodes> graph;
    graph.capture([](auto& cap) {
      auto* block = cap.template allocate<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(block, 1, bytes, cap.stream()));
    });
    graph.replay(stream);
    stream.synchronize();
  }
  stream.synchronize();
  CHECK(cuda_double::live_allocations() == 0);
}
