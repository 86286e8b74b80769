// No-device tests: on a machine without a GPU or driver (CI), graphcap fails with a cuda_error
// that names the CUDA error and says there is no GPU; it never crashes. Skipped where a device is.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <string>

namespace gc = graphcap;

TEST_CASE("capturing without a device throws cuda_error naming the CUDA error") {
  gc::lean_graph graph;
  bool called = false;
  try {
    graph.capture([&] { called = true; });
    FAIL("capture succeeded without a device");
  } catch (const gc::cuda_error& failure) {
    const std::string text = failure.what();
    INFO(text);
    CHECK((failure.code() == cudaErrorInsufficientDriver || failure.code() == cudaErrorNoDevice));
    CHECK_THAT(text, gctest::contains(cudaGetErrorName(failure.code())));
    CHECK_THAT(text, gctest::contains("no usable CUDA driver or GPU"));
  }
  CHECK_FALSE(called);
  CHECK(graph.empty());
  gctest::require_no_last_error();
}

TEST_CASE("a scope on an explicit stream fails the same way, before any capture") {
  gc::lean_graph graph;
  cudaStream_t not_a_real_stream = cudaStreamPerThread;
  CHECK_THROWS_AS(graph.begin_capture(not_a_real_stream), gc::cuda_error);
  CHECK(graph.empty());
}

TEST_CASE("replay and the other calls still give graphcap errors, never a crash") {
  gc::lean_graph graph;
  CHECK_THROWS_AS(graph.replay(), gc::state_error);
  CHECK_THROWS_AS(graph.upload(), gc::state_error);
  CHECK_NOTHROW(graph.reset());
}
