// Host tests: misuse that graphcap diagnoses before (or instead of) any successful CUDA call.
// These run everywhere, with or without a GPU.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <string>
#include <utility>

namespace gc = graphcap;

TEST_CASE("replay before capture is a state_error that says to capture first") {
  gc::lean_graph graph;
  REQUIRE_THROWS_AS(graph.replay(), gc::state_error);
  try {
    graph.replay();
  } catch (const gc::state_error& failure) {
    CHECK_THAT(std::string(failure.what()), gctest::contains("replay()"));
    CHECK_THAT(std::string(failure.what()), gctest::contains("while the graph is empty"));
    CHECK_THAT(std::string(failure.what()), gctest::contains("capture"));
  }
  gctest::require_no_last_error();
}

TEST_CASE("handles and dumps of an empty graph are state_errors") {
  gc::lean_graph graph;
  CHECK_THROWS_AS(graph.raw_graph(), gc::state_error);
  CHECK_THROWS_AS(graph.raw_exec(), gc::state_error);
  CHECK_THROWS_AS(graph.debug_dump("never-written.dot"), gc::state_error);
  CHECK_THROWS_AS(graph.instantiate(), gc::state_error);
  CHECK_THROWS_AS(graph.upload(), gc::state_error);
  gc::lean_graph kept{gc::keep_graph};
  CHECK(kept.keeps_graph());
  CHECK_THROWS_WITH(kept.raw_graph(), gctest::contains("capture first"));
  CHECK_THROWS_WITH(graph.raw_graph(), gctest::contains("graphcap::keep_graph"));
}

TEST_CASE("capture on the legacy default stream is rejected with a message that says why") {
  gc::lean_graph graph;
  for (cudaStream_t stream : {cudaStream_t{}, cudaStreamLegacy}) {
    try {
      auto cap = graph.begin_capture(stream);
      FAIL("capture on the legacy default stream was accepted");
    } catch (const gc::capture_error& failure) {
      CHECK(failure.code() == cudaErrorStreamCaptureUnsupported);
      CHECK_THAT(std::string(failure.what()), gctest::contains("non-default stream"));
      CHECK_THAT(std::string(failure.what()), gctest::contains("replaying on the default stream"));
    }
    CHECK(graph.empty());
  }
  bool called = false;
  CHECK_THROWS_AS(graph.capture(cudaStreamLegacy, [&] { called = true; }), gc::capture_error);
  CHECK_FALSE(called);
  gctest::require_no_last_error();
}

TEST_CASE("only 0 and cudaStreamLegacy are the legacy default stream") {
  CHECK(gc::is_legacy_default_stream(nullptr));
  CHECK(gc::is_legacy_default_stream(cudaStreamLegacy));
  CHECK_FALSE(gc::is_legacy_default_stream(cudaStreamPerThread));
}

TEST_CASE("reset of an empty graph is harmless and moved-from graphs are empty") {
  gc::lean_graph graph;
  REQUIRE_NOTHROW(graph.reset());
  gc::lean_graph other = std::move(graph);
  CHECK(other.empty());
  CHECK(graph.empty()); // NOLINT(bugprone-use-after-move): moved-from state is specified
  graph = std::move(other);
  CHECK(graph.empty());
}
