// Fault injection on the CUDA test double: every CUDA call graphcap makes in a capture, replay
// and reset fails once in turn. Each failure must surface as a graphcap::error (or be absorbed
// where graphcap documents it: teardown), leave no stream capturing and nothing leaked, and the
// same graph object must capture and replay correctly afterwards.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"

#include <cuda_double/control.hpp>

#include <map>
#include <string>

namespace gc = graphcap;

namespace {

void CUDART_CB add_one(void* counter) {
  ++*static_cast<int*>(counter);
}

/// The scenario: capture one host node on the side stream, replay it twice, reset.
void scenario(gc::lean_graph& graph, cudaStream_t replay_stream, int& counter) {
  graph.capture([&](cudaStream_t s) {
    if (cudaLaunchHostFunc(s, add_one, &counter) != cudaSuccess) {
      throw std::runtime_error("the test's own cudaLaunchHostFunc failed");
    }
  });
  graph.replay(replay_stream);
  graph.replay(replay_stream);
  graph.reset();
}

} // namespace

TEST_CASE("every CUDA call graphcap makes may fail once and the graph stays reusable") {
  cuda_double::reset();
  cudaStream_t replay_stream = nullptr;
  CUDA_REQUIRE(cudaStreamCreateWithFlags(&replay_stream, cudaStreamNonBlocking));

  // Learn graphcap's call sites from one clean run.
  std::map<std::string, std::size_t> sites;
  {
    int counter = 0;
    gc::lean_graph graph;
    cuda_double::clear_call_counts();
    scenario(graph, replay_stream, counter);
    sites = cuda_double::call_counts();
    REQUIRE(counter == 2);
  }
  sites.erase("cudaLaunchHostFunc"); // the test's own call
  REQUIRE(sites.size() >= 6);

  const std::size_t injected = gctest::fail_each_call_once(sites, [&](const std::string& function) {
    const gctest::live_objects before;
    int counter = 0;
    {
      gc::lean_graph graph;
      try {
        scenario(graph, replay_stream, counter);
      } catch (const gc::error&) {
        // typed: fine
      }
      // Whatever failed, nothing is capturing and the same graph works again.
      REQUIRE_NOTHROW(graph.reset());
      counter = 0;
      REQUIRE_NOTHROW(scenario(graph, replay_stream, counter));
      CHECK(counter == 2);
    }
    // A destroy call that fails cannot be retried (graphcap's destructors never throw): that
    // one object stays. Every other failure leaks nothing.
    const bool destroy_failed = function.find("Destroy") != std::string::npos;
    const std::size_t allowed = destroy_failed ? 1 : 0;
    CHECK(cuda_double::live_graphs() - before.graphs <=
          (function == "cudaGraphDestroy" ? allowed : 0));
    CHECK(cuda_double::live_execs() - before.execs <=
          (function == "cudaGraphExecDestroy" ? allowed : 0));
    CHECK(cuda_double::live_streams() <= (function == "cudaStreamDestroy" ? 2U : 1U));
    static_cast<void>(cudaGetLastError());
  });
  CHECK(injected >= 10);
  CUDA_REQUIRE(cudaStreamDestroy(replay_stream));
}

TEST_CASE("a failed instantiate() of an instantiated graph leaves its template to instantiate "
          "again") {
  // The old executable goes first (a graph with memory nodes has one at a time); the graph was
  // left "instantiated" with none, refusing replay() and raw_exec() until a reset.
  cuda_double::reset();
  int counter = 0;
  gctest::stream stream;
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter)); });
  graph.instantiate();
  cuda_double::fail_call("cudaGraphInstantiateWithFlags", cudaErrorUnknown);
  CHECK_THROWS_AS(graph.instantiate(), gc::cuda_error);
  CHECK(graph.state() == gc::graph_state::captured);
  graph.replay(stream); // instantiates the template again
  stream.synchronize();
  CHECK(counter == 1);
  CHECK(graph.state() == gc::graph_state::instantiated);
  CHECK(cuda_double::live_execs() == 1);
}
