// Tests of capture diagnostics that need the CUDA test double's control API: CUPTI unavailable
// (another subscriber, another tool), the subscriber shared with annot::on and given back, the
// switch off (nothing installed, nothing subscribed), driver calls, and calls made inside others.
#include <graphcap/annotations.hpp>
#include <graphcap/control_flow.hpp>
#include <graphcap/diagnostics.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>
#include <cuda_double/cupti_control.hpp>

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <string>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 256;

/// The capture_error text of a capture whose work synchronizes its stream.
std::string synchronizing_capture_failure(cudaStream_t stream) {
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::lean_graph graph;
  try {
    graph.capture(stream, [&](cudaStream_t s) {
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, s));
      static_cast<void>(cudaStreamSynchronize(s));
    });
  } catch (const gc::capture_error& error) {
    CHECK(graph.state() == gc::graph_state::empty);
    return error.what();
  }
  FAIL("the capture did not fail");
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

/// Captures one memset and replays it: what must keep working with diagnostics unavailable.
void capture_and_replay(cudaStream_t stream) {
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::lean_graph graph;
  graph.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 7, bytes, s)); });
  graph.replay(stream);
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
}

using capture_info_fn = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                     const CUgraphNode**, const CUgraphEdgeData**, size_t*);

/// The driver's cuStreamGetCaptureInfo (the double serves it through its runtime function).
capture_info_fn driver_capture_info() {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CUDA_REQUIRE(cudaGetDriverEntryPointByVersion("cuStreamGetCaptureInfo", &function, 13000,
                                                cudaEnableDefault, &found));
  REQUIRE(found == cudaDriverEntryPointSuccess);
  return reinterpret_cast<capture_info_fn>(function); // NOLINT: how entry points are typed
}

} // namespace

TEST_CASE("diagnostics off: nothing installed, CUPTI untouched, the error as before") {
  gctest::stream stream;
  REQUIRE(gc::detail::diagnosis() == nullptr);
  cuda_double::clear_call_counts();
  const std::string text = synchronizing_capture_failure(stream);
  CHECK_FALSE(contains(text, "invalidated by cuda"));
  CHECK_FALSE(contains(text, "diagnostics"));
  CHECK(contains(text, "cudaErrorStreamCaptureInvalidated"));
  for (const auto& [function, count] : cuda_double::call_counts()) {
    CAPTURE(function);
    CHECK(function.rfind("cupti", 0) != 0); // no CUPTI call at all
  }
  CHECK_FALSE(cuda_double::cupti_subscribed());
}

TEST_CASE("diagnostics on and off: the subscriber is taken, then given back") {
  gctest::stream stream;
  {
    const gc::capture_diagnostics diagnostics;
    CHECK(diagnostics.available());
    CHECK(diagnostics.unavailable_reason().empty());
    CHECK(cuda_double::cupti_subscribed());
    CHECK(gc::detail::diagnosis() != nullptr);
    {
      const gc::capture_diagnostics nested; // shares the state: still on once it is gone
    }
    CHECK(gc::detail::diagnosis() != nullptr);
    CHECK(contains(synchronizing_capture_failure(stream), "invalidated by cudaStreamSynchronize"));
  }
  CHECK(gc::detail::diagnosis() == nullptr);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  CHECK_FALSE(contains(synchronizing_capture_failure(stream), "invalidated by cuda"));
}

TEST_CASE("diagnostics unavailable: another client holds CUPTI's subscriber") {
  gctest::stream stream;
  cuda_double::set_cupti_subscriber_taken(true);
  {
    const gc::capture_diagnostics diagnostics;
    CHECK_FALSE(diagnostics.available());
    CHECK(contains(diagnostics.unavailable_reason(),
                   "CUPTI's one callback subscriber is held by another tool or client"));
    const std::string text = synchronizing_capture_failure(stream);
    CHECK(contains(text, "Hint: capture diagnostics were unavailable: CUPTI's one callback "
                         "subscriber is held by another tool or client (compute-sanitizer, "
                         "Nsight Systems or Compute, cuda-gdb, a profiler in this process): "
                         "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; the capture was "
                         "invalidated"));
    capture_and_replay(stream); // everything else works
  }
  cuda_double::set_cupti_subscriber_taken(false);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  const gc::capture_diagnostics later; // available again once the other client let go
  CHECK(later.available());
}

TEST_CASE("diagnostics unavailable: a tool holds CUPTI") {
  gctest::stream stream;
  cuda_double::set_cupti_held_by_other_tool(true);
  {
    const gc::capture_diagnostics diagnostics;
    CHECK_FALSE(diagnostics.available());
    CHECK(contains(synchronizing_capture_failure(stream), "capture diagnostics were unavailable"));
    capture_and_replay(stream);
  }
  cuda_double::set_cupti_held_by_other_tool(false);
}

TEST_CASE("diagnostics unavailable: CUPTI refuses the API domains") {
  gctest::stream stream;
  cuda_double::fail_call("cuptiEnableDomain", static_cast<cudaError_t>(CUPTI_ERROR_UNKNOWN));
  {
    const gc::capture_diagnostics diagnostics;
    CHECK_FALSE(diagnostics.available());
    CHECK(contains(diagnostics.unavailable_reason(), "CUPTI refused its API callbacks"));
    CHECK_FALSE(cuda_double::cupti_subscribed()); // the share taken was given back
    capture_and_replay(stream);
  }
  CHECK_FALSE(cuda_double::cupti_subscribed());
}

TEST_CASE("diagnostics share CUPTI's subscriber with annot::on's node discovery") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const gc::capture_diagnostics diagnostics;
  gc::graph_with<gc::annot::on> graph;
  graph.capture(stream, [&](auto& cap) {
    const auto scope = cap.mark("fill");
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, cap.stream()));
  });
  CHECK(graph.annot_policy().discovery() == gc::node_discovery::creation_callbacks);
  CHECK(graph.annot_policy().annotations().size() == 1);
  CHECK(cuda_double::cupti_subscribed()); // kept for diagnostics after annot::on gave its share
  // Diagnostics still see calls.
  CHECK(contains(synchronizing_capture_failure(stream), "invalidated by cudaStreamSynchronize"));
}

TEST_CASE("diagnostics count a driver call once, under its own name") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const gc::capture_diagnostics diagnostics;
  const capture_info_fn capture_info = driver_capture_info();
  gc::lean_graph graph;
  try {
    graph.capture(stream, [&](cudaStream_t s) {
      CUstreamCaptureStatus status{};
      REQUIRE(capture_info(s, &status, nullptr, nullptr, nullptr, nullptr, nullptr) ==
              CUDA_SUCCESS);                                    // call 1, in the driver domain
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, s)); // call 2
      static_cast<void>(cudaStreamSynchronize(s));              // call 3
    });
    FAIL("the capture did not fail");
  } catch (const gc::capture_error&) {
  }
  const std::optional<gc::offending_call> call = gc::capture_diagnostics::last_offending_call();
  REQUIRE(call.has_value());
  CHECK(call->function == "cudaStreamSynchronize");
  CHECK(call->ordinal == 3);
}

TEST_CASE("diagnostics name a failing driver call, with its CUresult") {
  gctest::stream stream;
  gctest::stream forked;
  gctest::event fork;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const gc::capture_diagnostics diagnostics;
  const capture_info_fn capture_info = driver_capture_info();
  gc::lean_graph graph;
  std::string text;
  try {
    graph.capture(stream, [&](cudaStream_t s) {
      cuda_double::fail_call("cuStreamGetCaptureInfo", cudaErrorInvalidValue);
      CUstreamCaptureStatus status{};
      static_cast<void>(capture_info(s, &status, nullptr, nullptr, nullptr, nullptr, nullptr));
      CUDA_REQUIRE(cudaEventRecord(fork, s)); // then a fork never joined: the end fails
      CUDA_REQUIRE(cudaStreamWaitEvent(forked, fork, 0));
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, forked));
    });
  } catch (const gc::capture_error& error) {
    text = error.what();
  }
  // Not a capture error, and the capture was not invalidated: named as the first failure, with
  // the hint for what did break it.
  CHECK(contains(text, "Hint: capture diagnostics saw no call fail with a capture error; the first "
                       "call that failed during the capture was cuStreamGetCaptureInfo (call 1 of "
                       "the capture, thread 1), which returned CUresult 1; work was forked"));
  const std::optional<gc::offending_call> call = gc::capture_diagnostics::last_offending_call();
  REQUIRE(call.has_value());
  CHECK(call->driver);
  CHECK(call->result == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("diagnostics name nothing for a capture that succeeded") {
  gctest::stream stream;
  const gc::capture_diagnostics diagnostics;
  static_cast<void>(synchronizing_capture_failure(stream));
  REQUIRE(gc::capture_diagnostics::last_offending_call().has_value());
  capture_and_replay(stream);
  CHECK_FALSE(gc::capture_diagnostics::last_offending_call().has_value());
}

TEST_CASE("diagnostics name the call that broke a conditional body's capture") {
  const gc::capture_diagnostics diagnostics;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::lean_graph graph;
  std::string text;
  try {
    graph.capture(stream, [&](gc::lean_graph::scope& cap) {
      const gc::condition more = graphcap::make_condition(cap, 1);
      graphcap::while_(cap, more, [&](cudaStream_t body) {
        CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, body));
        void* memory = nullptr;
        static_cast<void>(cudaMalloc(&memory, bytes)); // breaks the body's capture
      });
    });
  } catch (const gc::capture_error& error) {
    text = error.what();
  }
  static_cast<void>(cudaGetLastError());
  INFO(text);
  REQUIRE_FALSE(text.empty());
  CHECK(contains(text, "invalidated by cudaMalloc (call "));
  CHECK_FALSE(gctest::capturing(stream));
  const std::optional<gc::offending_call> call = gc::capture_diagnostics::last_offending_call();
  REQUIRE(call.has_value());
  CHECK(call->function == "cudaMalloc");
}
