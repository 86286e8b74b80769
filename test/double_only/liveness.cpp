// liveness::check on the CUDA test double: the exact driver queries a checked replay makes, and
// the failure paths only fault injection reaches.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>

#include <map>
#include <string>

namespace gc = graphcap;
using call_map = std::map<std::string, std::size_t>;

namespace {

using checked_graph = gc::graph_with<gc::liveness::check>;

/// Two copies between three buffers, one of them read through two addresses.
void capture_copies(checked_graph& graph, cudaStream_t stream, unsigned char* a, unsigned char* b,
                    unsigned char* c) {
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(b, a, 256, cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(c, a + 512, 256, cudaMemcpyDeviceToDevice, s));
  });
}

} // namespace

TEST_CASE("a checked replay is one buffer-id query per input allocation, then the launch") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> a(1024);
  gctest::device_buffer<unsigned char> b(1024);
  gctest::device_buffer<unsigned char> c(1024);
  checked_graph graph;
  capture_copies(graph, stream, a.get(), b.get(), c.get());
  CHECK(graph.liveness_policy().input_count() == 4); // four addresses...
  cuda_double::clear_call_counts();
  graph.replay(stream);
  // ...in three allocations
  CHECK(cuda_double::call_counts() ==
        call_map{{"cuPointerGetAttribute", 3}, {"cudaGraphLaunch", 1}});
}

TEST_CASE("a graph with no input replays with no query at all") {
  cuda_double::reset();
  gctest::stream stream;
  checked_graph graph;
  graph.capture(stream, [](cudaStream_t) {});
  cuda_double::clear_call_counts();
  graph.replay(stream);
  CHECK(cuda_double::call_counts() == call_map{{"cudaGraphLaunch", 1}});
}

TEST_CASE("a query that fails for another reason than a freed input is retried, not reported") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> a(1024);
  gctest::device_buffer<unsigned char> b(1024);
  gctest::device_buffer<unsigned char> c(1024);
  checked_graph graph;
  capture_copies(graph, stream, a.get(), b.get(), c.get());
  // CUDA_ERROR_INVALID_CONTEXT, as on a thread with no current context
  cuda_double::fail_call("cuPointerGetAttribute", static_cast<cudaError_t>(201));
  graph.replay(stream);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
  gctest::require_no_last_error();
}

TEST_CASE("a driver error while diagnosing is a cuda_error, not a liveness_error") {
  cuda_double::reset();
  gctest::stream stream;
  void* a = nullptr;
  CUDA_REQUIRE(cudaMalloc(&a, 1024));
  gctest::device_buffer<unsigned char> b(1024);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(b.get(), a, 256, cudaMemcpyDeviceToDevice, s));
  });
  cuda_double::fail_call("cuPointerGetAttribute", static_cast<cudaError_t>(201));
  cuda_double::fail_call("cuPointerGetAttribute", static_cast<cudaError_t>(201), 2);
  try {
    graph.replay(stream);
    FAIL("the replay went ahead");
  } catch (const gc::liveness_error&) {
    FAIL("a failed query was reported as a dead input");
  } catch (const gc::cuda_error& failure) {
    CHECK_THAT(std::string(failure.what()), gctest::contains("cuPointerGetAttribute"));
  }
  CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
  CUDA_REQUIRE(cudaFree(a));
}

TEST_CASE("a failed graph query at capture end: cuda_error, the graph empty, no last error") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> a(1024);
  gctest::device_buffer<unsigned char> b(1024);
  gctest::device_buffer<unsigned char> c(1024);
  checked_graph graph;
  cuda_double::fail_call("cudaGraphMemcpyNodeGetParams", cudaErrorInvalidValue);
  try {
    capture_copies(graph, stream, a.get(), b.get(), c.get());
    FAIL("the capture succeeded");
  } catch (const gc::cuda_error& failure) {
    CHECK(failure.code() == cudaErrorInvalidValue);
    CHECK(failure.call() == "cudaGraphMemcpyNodeGetParams");
  }
  CHECK(graph.empty());
  CHECK(graph.liveness_policy().input_count() == 0);
  CHECK(cuda_double::live_graphs() == 0);
  gctest::require_no_last_error();
}

TEST_CASE("a driver function the driver lacks: a cuda_error that names it") {
  cuda_double::reset();
  try {
    static_cast<void>(gc::detail::load_driver_function<void (*)()>("cuNoSuchFunction"));
    FAIL("a missing driver function was resolved");
  } catch (const gc::cuda_error& failure) {
    CHECK(failure.code() == cudaErrorSymbolNotFound);
    CHECK_THAT(std::string(failure.what()), gctest::contains("cuNoSuchFunction"));
  }
  gctest::require_no_last_error();
}

TEST_CASE("the entry-point lookup failing: a cuda_error, the last error cleared") {
  cuda_double::reset();
  cuda_double::fail_call("cudaGetDriverEntryPointByVersion", cudaErrorInvalidValue);
  CHECK_THROWS_AS(gc::detail::load_driver_function<void (*)()>("cuPointerGetAttribute"),
                  gc::cuda_error);
  gctest::require_no_last_error();
}
