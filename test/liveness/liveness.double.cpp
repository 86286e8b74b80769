// liveness::check on the CUDA test double: the exact driver queries a checked replay makes, and
// the failure paths only fault injection reaches.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "hidden_driver_function.hpp"

#include <cuda_double/control.hpp>

#include <map>
#include <string>
#include <vector>

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

/// One copy from `source` to `destination`: the scan at capture end queries the source first.
void capture_copy(checked_graph& graph, cudaStream_t stream, void* destination,
                  const void* source) {
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(destination, source, 256, cudaMemcpyDeviceToDevice, s));
  });
}

/// Driver failures that say nothing about an address (the double returns them as injected).
constexpr CUresult other_failures[] = {CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_DEINITIALIZED,
                                       CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_UNKNOWN};

cudaError_t as_runtime_status(CUresult status) {
  return static_cast<cudaError_t>(status); // how graphcap reports a driver status
}

/// The double reset before anything else of a test is made.
struct fresh_double {
  fresh_double() { cuda_double::reset(); }
};

/// What the query-failure tests share: a fresh double, a stream, two buffers and a checked
/// graph that copies one into the other.
struct copy_setup : fresh_double {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> a{1024};
  gctest::device_buffer<unsigned char> b{1024};
  checked_graph graph;

  void capture() { capture_copy(graph, stream, b.get(), a.get()); }
};

/// The next query (and the `nth` after it, when given) fails with `status`.
void fail_queries(CUresult status, int nth = 0) {
  cuda_double::fail_call("cuPointerGetAttribute", as_runtime_status(status));
  if (nth != 0) {
    cuda_double::fail_call("cuPointerGetAttribute", as_runtime_status(status), nth);
  }
}

/// A failed query reported as itself: graphcap's cuda_error with the driver's status.
void check_failed_query(const gc::cuda_error& failure, CUresult status) {
  CHECK(failure.code() == as_runtime_status(status));
  CHECK(failure.call() == "cuPointerGetAttribute");
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
  const gc::detail::driver_function<void (*)(), 12000> missing{"cuNoSuchFunction"};
  try {
    static_cast<void>(missing.require(gc::detail::liveness::liveness_needs));
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
  const gc::detail::driver_function<PFN_cuPointerGetAttribute_v4000, 4000> query{
      "cuPointerGetAttribute"}; // not resolved yet, unlike the process's
  CHECK_THROWS_AS(query.require(gc::detail::liveness::liveness_needs), gc::cuda_error);
  gctest::require_no_last_error();
  CHECK(query.cached() == nullptr); // a failed lookup is not kept: the next use asks again
  CHECK(query.require(gc::detail::liveness::liveness_needs) != nullptr);
}

// ---- how a cuPointerGetAttribute failure is read ---------------------------------------------
// Only CUDA_ERROR_INVALID_VALUE means "no allocation there" (at capture: not CUDA memory; before
// a replay: freed). Any other failure is a cuda_error that names the call.

TEST_CASE("capture: CUDA_ERROR_INVALID_VALUE from the query means not CUDA memory, not tracked") {
  copy_setup t;
  fail_queries(CUDA_ERROR_INVALID_VALUE);
  t.capture(); // the driver says the source is no allocation
  CHECK(t.graph.liveness_policy().input_count() == 1); // the destination only
  cuda_double::clear_call_counts();
  t.graph.replay(t.stream);
  CHECK(cuda_double::call_counts() ==
        call_map{{"cuPointerGetAttribute", 1}, {"cudaGraphLaunch", 1}});
  gctest::require_no_last_error();
}

TEST_CASE("capture: another query failure is a cuda_error naming cuPointerGetAttribute, the "
          "capture discarded") {
  for (const CUresult failure_status : other_failures) {
    INFO("injected CUresult " << static_cast<int>(failure_status));
    copy_setup t;
    fail_queries(failure_status);
    try {
      t.capture();
      FAIL("the capture succeeded with an input it could not classify");
    } catch (const gc::cuda_error& failure) {
      check_failed_query(failure, failure_status);
      CHECK_THAT(std::string(failure.what()), gctest::contains("liveness check"));
    }
    CHECK(t.graph.empty());
    CHECK(t.graph.liveness_policy().input_count() == 0);
    CHECK_FALSE(gctest::capturing(t.stream));
    CHECK(cuda_double::live_graphs() == 0);
    CHECK(cuda_double::live_execs() == 0);
    gctest::require_no_last_error();
    // The same graph captures again, with both inputs tracked.
    t.capture();
    CHECK(t.graph.liveness_policy().input_count() == 2);
    cuda_double::clear_call_counts();
    t.graph.replay(t.stream);
    CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
  }
}

TEST_CASE("input(): a query failure other than CUDA_ERROR_INVALID_VALUE is a cuda_error naming "
          "cuPointerGetAttribute, the capture discarded") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> indirect(1024);
  gctest::device_buffer<unsigned char> target(1024);
  checked_graph graph;
  const auto work = [&](checked_graph::scope& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(target.get(), 0, 256, cap.stream()));
    cap.input(indirect.get()); // queried here, during the capture
  };
  fail_queries(CUDA_ERROR_UNKNOWN);
  try {
    graph.capture(stream, work);
    FAIL("the capture succeeded");
  } catch (const gc::cuda_error& failure) {
    // not the "not in memory CUDA allocated" error of scope::input(): the pointer may well be
    CHECK(failure.code() == cudaErrorUnknown);
    CHECK(failure.call() == "cuPointerGetAttribute");
  }
  CHECK(graph.empty());
  CHECK(graph.liveness_policy().input_count() == 0);
  CHECK_FALSE(gctest::capturing(stream));
  CHECK(cuda_double::live_graphs() == 0);
  gctest::require_no_last_error();
  graph.capture(stream, work);
  CHECK(graph.liveness_policy().input_count() == 2);
  graph.replay(stream);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
}

TEST_CASE("add_input() after the capture: a failed query is a cuda_error, the tracking unchanged") {
  copy_setup t;
  gctest::device_buffer<unsigned char> indirect(1024);
  t.capture();
  REQUIRE(t.graph.liveness_policy().input_count() == 2);
  fail_queries(CUDA_ERROR_DEINITIALIZED);
  try {
    gc::add_liveness_input(t.graph, indirect.get());
    FAIL("add_input() accepted an input it could not classify");
  } catch (const gc::cuda_error& failure) {
    check_failed_query(failure, CUDA_ERROR_DEINITIALIZED);
  }
  CHECK(t.graph.liveness_policy().input_count() == 2);
  cuda_double::clear_call_counts();
  t.graph.replay(t.stream); // the two inputs of the capture, nothing else
  CHECK(cuda_double::call_counts() ==
        call_map{{"cuPointerGetAttribute", 2}, {"cudaGraphLaunch", 1}});
  gc::add_liveness_input(t.graph, indirect.get()); // the driver answers again
  CHECK(t.graph.liveness_policy().input_count() == 3);
}

TEST_CASE("replay: CUDA_ERROR_INVALID_VALUE from the check and its diagnosis is a freed input") {
  copy_setup t;
  t.capture();
  // The replay's check queries the source first; the diagnosis asks again, source first.
  fail_queries(CUDA_ERROR_INVALID_VALUE, 2);
  cuda_double::clear_call_counts();
  try {
    t.graph.replay(t.stream);
    FAIL("the replay went ahead");
  } catch (const gc::liveness_error& refusal) {
    CHECK_THAT(std::string(refusal.what()),
               gctest::contains("1 input of the graph is no longer alive"));
    CHECK_THAT(std::string(refusal.what()), gctest::contains(" freed: memcpy source"));
  }
  CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
  gctest::require_no_last_error();
  t.graph.replay(t.stream); // the driver knows the allocation again: the graph launches
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
}

TEST_CASE("replay: another query failure, in the check and its diagnosis, is a cuda_error naming "
          "cuPointerGetAttribute, not a freed input") {
  for (const CUresult failure_status : other_failures) {
    INFO("injected CUresult " << static_cast<int>(failure_status));
    copy_setup t;
    t.capture();
    fail_queries(failure_status, 2);
    cuda_double::clear_call_counts();
    try {
      t.graph.replay(t.stream);
      FAIL("the replay went ahead");
    } catch (const gc::liveness_error&) {
      FAIL("a failed query was reported as a dead input");
    } catch (const gc::cuda_error& failure) {
      check_failed_query(failure, failure_status);
    }
    CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
    gctest::require_no_last_error();
    t.graph.replay(t.stream); // the same graph replays once the driver answers
    CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
  }
}

// ---- the driver functions it uses: each node's type once, a missing one fails only liveness --

TEST_CASE("the scan at capture end asks each node's type once, through the driver") {
  copy_setup t;
  cuda_double::clear_call_counts();
  t.graph.capture(t.stream, [&](cudaStream_t s) {
    void* scratch = nullptr; // a memory allocation node (internal) and its free node
    CUDA_REQUIRE(cudaMallocAsync(&scratch, 256, s));
    CUDA_REQUIRE(cudaMemcpyAsync(scratch, t.a.get(), 256, cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(t.b.get(), scratch, 256, cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaMemsetAsync(t.b.get(), 0, 16, s));
    CUDA_REQUIRE(cudaFreeAsync(scratch, s));
  });
  REQUIRE(t.graph.node_count() == 5);
  CHECK(t.graph.liveness_policy().input_count() == 2); // a and b; scratch is the graph's own
  CHECK(cuda_double::calls("cuGraphNodeGetType") == 5);
  CHECK(cuda_double::calls("cudaGraphNodeGetType") == 0);
}

TEST_CASE("a driver without cuPointerGetAttribute fails the checked capture before it begins, "
          "naming the liveness check and the function") {
  copy_setup t;
  const gctest::hidden_driver_function missing{"cuPointerGetAttribute"};
  cuda_double::clear_call_counts();
  try {
    t.capture();
    FAIL("the capture succeeded without the driver function that checks replays");
  } catch (const gc::cuda_error& failure) {
    CHECK(failure.code() == cudaErrorSymbolNotFound);
    CHECK(failure.call() == "cudaGetDriverEntryPointByVersion(cuPointerGetAttribute)");
    CHECK_THAT(std::string(failure.what()),
               gctest::contains("graphcap's liveness check needs cuPointerGetAttribute (CUDA "
                                "4.0 driver or newer); the installed CUDA driver does not "
                                "provide it"));
  }
  CHECK(cuda_double::calls("cudaStreamBeginCapture") == 0);
  CHECK(t.graph.empty());
  CHECK(cuda_double::live_graphs() == 0);
  gctest::require_no_last_error();
}

TEST_CASE("a driver older than cuGraphNodeGetType fails the checked capture at its end, naming "
          "the liveness check and the function") {
  copy_setup t;
  const gctest::hidden_driver_function missing{"cuGraphNodeGetType", true};
  try {
    t.capture();
    FAIL("the capture succeeded without the driver function that reads node types");
  } catch (const gc::cuda_error& failure) {
    CHECK(failure.code() == cudaErrorSymbolNotFound);
    CHECK_THAT(std::string(failure.what()),
               gctest::contains("graphcap's liveness check needs cuGraphNodeGetType (CUDA 10.0 "
                                "driver or newer); the installed CUDA driver is older"));
  }
  CHECK(t.graph.empty());
  CHECK(t.graph.liveness_policy().input_count() == 0);
  CHECK_FALSE(gctest::capturing(t.stream));
  CHECK(cuda_double::live_graphs() == 0);
  gctest::require_no_last_error();
}

TEST_CASE("the checked capture works again once the driver has the function") {
  copy_setup t;
  {
    const gctest::hidden_driver_function missing{"cuPointerGetAttribute"};
    CHECK_THROWS_AS(t.capture(), gc::cuda_error);
  }
  t.capture(); // looked up again: a failed lookup is not remembered
  CHECK(t.graph.liveness_policy().input_count() == 2);
  t.graph.replay(t.stream);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
}

TEST_CASE("liveness works while a driver function it does not need here is missing") {
  // Annotations' functions, cuFuncGetName (liveness names kernels with it where it can), and the
  // kernel functions, looked up only for a graph with kernel nodes.
  const char* const symbol =
      GENERATE("cuStreamGetCaptureInfo", "cuGraphNodeGetDependentNodes", "cuGraphGetRootNodes",
               "cuGraphGetNodes", "cuFuncGetName", "cuGraphKernelNodeGetParams",
               "cuKernelGetFunction", "cuFuncGetParamInfo");
  INFO("missing: " << symbol);
  copy_setup t;
  void* source = nullptr;
  CUDA_REQUIRE(cudaMalloc(&source, 1024));
  const gctest::hidden_driver_function missing{symbol};
  capture_copy(t.graph, t.stream, t.b.get(), source);
  CHECK(t.graph.liveness_policy().input_count() == 2);
  t.graph.replay(t.stream);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
  CHECK(cuda_double::calls(symbol) == 0);
  CUDA_REQUIRE(cudaFree(source)); // the copy's source is freed: the replay is refused
  CHECK_THROWS_AS(t.graph.replay(t.stream), gc::liveness_error);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
}
