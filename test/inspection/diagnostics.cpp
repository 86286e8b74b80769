// Runtime tests: capture diagnostics (<graphcap/diagnostics.hpp>) name the call that broke a
// capture: a cudaMalloc, a synchronize, legacy-stream work, another thread's call in global mode,
// and the annot::on scope it was made in. Host-executable work only, so the same cases run on the
// GPU (real CUPTI) and on the test double (its CUPTI).
#include <graphcap/annotations.hpp>
#include <graphcap/diagnostics.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "diagnostics_skip.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <thread>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 256;

/// The capture_error text of `graph.capture(stream, work)`, which must fail.
template <class Graph, class Work>
std::string capture_failure(Graph& graph, cudaStream_t stream, Work&& work) {
  try {
    graph.capture(stream, work);
  } catch (const gc::capture_error& error) {
    CHECK_FALSE(gctest::capturing(stream)); // a failed capture leaves no stream capturing
    return error.what();
  }
  FAIL("the capture did not fail");
  return {};
}

/// The call diagnostics name for the capture just failed on this thread.
gc::offending_call culprit() {
  const std::optional<gc::offending_call> call = gc::capture_diagnostics::last_offending_call();
  REQUIRE(call.has_value());
  return *call;
}

bool contains(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("diagnostics name a cudaMalloc made during the capture") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::lean_graph graph;
  cudaError_t malloc_status = cudaSuccess;
  const std::string text = capture_failure(graph, stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, s));
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 2, bytes, s));
    void* memory = nullptr;
    malloc_status = cudaMalloc(&memory, bytes); // call 3
  });
  static_cast<void>(cudaGetLastError());
  CHECK(malloc_status == cudaErrorStreamCaptureUnsupported);
  const gc::offending_call call = culprit();
  CHECK(call.function == "cudaMalloc");
  CHECK_FALSE(call.driver);
  CHECK(call.result == cudaErrorStreamCaptureUnsupported);
  CHECK(call.ordinal == 3);
  CHECK(call.thread == 1);
  CHECK(call.scope.empty());
  CHECK(contains(text, "invalidated by cudaMalloc (call 3 of the capture, thread 1), which "
                       "returned cudaErrorStreamCaptureUnsupported: allocating or freeing memory"));
  CHECK(graph.state() == gc::graph_state::empty); // and the graph captures again
  graph.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 3, bytes, s)); });
  CHECK(graph.state() == gc::graph_state::instantiated);
  CHECK_FALSE(gc::capture_diagnostics::last_offending_call().has_value());
}

TEST_CASE("diagnostics name a synchronize of the capturing stream") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::lean_graph graph;
  const std::string text = capture_failure(graph, stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, s));
    static_cast<void>(cudaStreamSynchronize(s));                   // call 2
    static_cast<void>(cudaMemsetAsync(buffer.get(), 2, bytes, s)); // fails: already invalidated
  });
  static_cast<void>(cudaGetLastError());
  const gc::offending_call call = culprit();
  CHECK(call.function == "cudaStreamSynchronize");
  CHECK(call.ordinal == 2);
  CHECK(call.thread == 1);
  CHECK(contains(text, "invalidated by cudaStreamSynchronize (call 2 of the capture, thread 1), "
                       "which returned cudaErrorStreamCaptureUnsupported: synchronizing or "
                       "querying a capturing stream is not allowed"));
}

TEST_CASE("diagnostics name legacy-stream work during a blocking stream's capture") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream(cudaStreamDefault); // blocking: synchronizes with the legacy stream
  gctest::device_buffer<unsigned char> buffer(bytes);
  gctest::device_buffer<unsigned char> other(bytes);
  gc::lean_graph graph;
  cudaError_t legacy_status = cudaSuccess;
  const std::string text = capture_failure(graph, stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, s));
    legacy_status = cudaMemsetAsync(other.get(), 2, bytes, nullptr); // call 2: legacy stream
  });
  static_cast<void>(cudaGetLastError());
  CHECK(legacy_status == cudaErrorStreamCaptureImplicit);
  const gc::offending_call call = culprit();
  CHECK(call.function == "cudaMemsetAsync");
  CHECK(call.result == cudaErrorStreamCaptureImplicit);
  CHECK(call.ordinal == 2);
  CHECK(call.thread == 1);
  // The end reports cudaErrorStreamCaptureInvalidated on the double ("invalidated by"); CUDA may
  // report the implicit dependency itself ("broken by"), as test/core/errors.cpp allows.
  CHECK(contains(text, "by cudaMemsetAsync (call 2 of the capture, thread 1), which returned "
                       "cudaErrorStreamCaptureImplicit: work on the legacy default stream"));
}

TEST_CASE("diagnostics name another thread's call during a global-mode capture") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::graph_with<gc::mode::global> graph;
  auto cap = graph.begin_capture(stream);
  CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, cap.stream()));
  cudaError_t other_status = cudaSuccess;
  std::thread other([&] {
    void* memory = nullptr;
    other_status = cudaMalloc(&memory, bytes); // call 2, on thread 2
    static_cast<void>(cudaGetLastError());
  });
  other.join();
  std::string text;
  try {
    cap.end();
  } catch (const gc::capture_error& error) {
    text = error.what();
  }
  CHECK(other_status == cudaErrorStreamCaptureUnsupported);
  const gc::offending_call call = culprit();
  CHECK(call.function == "cudaMalloc");
  CHECK(call.ordinal == 2);
  CHECK(call.thread == 2);
  CHECK(contains(text, "invalidated by cudaMalloc (call 2 of the capture, thread 2), which "
                       "returned cudaErrorStreamCaptureUnsupported: thread 2 is not the thread "
                       "that began the capture"));
}

TEST_CASE("diagnostics name the innermost annotation scope open at the offending call") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::graph_with<gc::annot::on> graph;
  const std::string text = capture_failure(graph, stream, [&](auto& cap) {
    const auto model = cap.mark("model");
    {
      const auto embed = cap.mark("embed");
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, cap.stream()));
    }
    const auto attention = cap.mark({{"layer", "3"}, {"name", "attention"}});
    static_cast<void>(cudaStreamSynchronize(cap.stream()));
  });
  static_cast<void>(cudaGetLastError());
  const gc::offending_call call = culprit();
  CHECK(call.function == "cudaStreamSynchronize");
  CHECK(call.scope == "attention");
  CHECK(contains(text, ", thread 1, inside scope 'attention'), which returned "
                       "cudaErrorStreamCaptureUnsupported"));
}

TEST_CASE("diagnostics say when no call failed during a failed capture") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream;
  gctest::stream forked;
  gctest::event fork;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::lean_graph graph;
  const std::string text = capture_failure(graph, stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaEventRecord(fork, s));
    CUDA_REQUIRE(cudaStreamWaitEvent(forked, fork, 0));
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, bytes, forked)); // never joined back
  });
  CHECK(contains(text, "cudaErrorStreamCaptureUnjoined"));
  CHECK(contains(text, "capture diagnostics saw 3 CUDA calls during the capture, none of which "
                       "failed"));
  CHECK_FALSE(gc::capture_diagnostics::last_offending_call().has_value());
}

TEST_CASE("diagnostics name the call when a pool's capture end reports the invalidation") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream;
  const auto invalidate = [&](auto& cap) {
    float* scratch = cap.template allocate<float>(64);
    CUDA_REQUIRE(cudaMemsetAsync(scratch, 0, 64 * sizeof(float), cap.stream()));
    void* memory = nullptr;
    static_cast<void>(cudaMalloc(&memory, bytes));
  };
  SECTION("a shared pool: no marker, the end reports it") {
    using shared_graph = gc::graph_with<gc::pool::shared>;
    shared_graph graph{gc::graph_pool_handle()};
    const std::string text = capture_failure(graph, stream, invalidate);
    static_cast<void>(cudaGetLastError());
    CHECK(contains(text, "graphcap: cudaStreamEndCapture failed: "
                         "cudaErrorStreamCaptureInvalidated"));
    CHECK(contains(text, "Hint: invalidated by cudaMalloc (call "));
  }
  SECTION("a private pool no one shares: the end reports it") {
    gc::graph graph;
    const std::string text = capture_failure(graph, stream, invalidate);
    static_cast<void>(cudaGetLastError());
    CHECK(contains(text, "graphcap: cudaStreamEndCapture failed: "
                         "cudaErrorStreamCaptureInvalidated"));
    CHECK(contains(text, "Hint: invalidated by cudaMalloc (call "));
  }
  const gc::offending_call call = culprit();
  CHECK(call.function == "cudaMalloc");
  CHECK(call.thread == 1);
}

TEST_CASE("diagnostics keep concurrent captures apart: each names its own thread's call") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::device_buffer<unsigned char> buffer(bytes);
  gctest::stream streams[2];
  // Each thread captures in mode::thread_local_, so the other thread's failing call does not
  // break its capture; each breaks its own, with a different call. No Catch2 assertion runs on
  // the threads (it is not thread-safe): they keep what they saw.
  std::optional<gc::offending_call> seen[2];
  std::string texts[2];
  cudaError_t memsets[2] = {cudaErrorUnknown, cudaErrorUnknown};
  const auto capture_on_thread = [&](int which) {
    gc::graph_with<gc::mode::thread_local_> graph;
    auto cap = graph.begin_capture(streams[which]);
    memsets[which] = cudaMemsetAsync(buffer.get(), which, bytes, cap.stream());
    if (which == 0) {
      static_cast<void>(cudaStreamSynchronize(cap.stream()));
    } else {
      void* memory = nullptr;
      static_cast<void>(cudaMalloc(&memory, bytes));
    }
    static_cast<void>(cudaGetLastError());
    try {
      cap.end();
    } catch (const gc::capture_error& error) {
      texts[which] = error.what();
    }
    seen[which] = gc::capture_diagnostics::last_offending_call();
  };
  std::thread first(capture_on_thread, 0);
  std::thread second(capture_on_thread, 1);
  first.join();
  second.join();
  CHECK(memsets[0] == cudaSuccess);
  CHECK(memsets[1] == cudaSuccess);
  REQUIRE(seen[0].has_value());
  REQUIRE(seen[1].has_value());
  CHECK(seen[0]->function == "cudaStreamSynchronize");
  CHECK(seen[1]->function == "cudaMalloc");
  CHECK(seen[0]->thread == 1);
  CHECK(seen[1]->thread == 1);
  CHECK(contains(texts[0], "invalidated by cudaStreamSynchronize"));
  CHECK(contains(texts[1], "invalidated by cudaMalloc"));
}
