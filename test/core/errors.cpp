// Runtime tests: failed captures. Each leaves the graph empty and capturable again, no stream
// capturing, and no CUDA last error behind.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <stdexcept>
#include <string>

namespace gc = graphcap;

namespace {

void CUDART_CB add_one(void* counter) {
  ++*static_cast<int*>(counter);
}

/// After a failed capture: the graph is empty, the stream free, and the graph captures again.
void require_recovered(gc::lean_graph& graph, cudaStream_t stream) {
  CHECK(graph.empty());
  CHECK_FALSE(gctest::capturing(stream));
  gctest::require_no_last_error();
  int counter = 0;
  graph.capture(stream, [&] { CUDA_REQUIRE(cudaLaunchHostFunc(stream, add_one, &counter)); });
  graph.replay(stream);
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  CHECK(counter == 1);
  graph.reset();
}

struct user_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace

TEST_CASE("an exception thrown by the work propagates unchanged and discards the capture") {
  gctest::stream stream;
  gc::lean_graph graph;
  int counter = 0;
  try {
    graph.capture(stream, [&](cudaStream_t s) {
      CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
      throw user_failure("from the work");
    });
    FAIL("no exception");
  } catch (const user_failure& failure) {
    CHECK(std::string(failure.what()) == "from the work");
  }
  CHECK(counter == 0);
  require_recovered(graph, stream);
}

TEST_CASE("cudaMalloc inside a global-mode capture: capture_error, then the graph recovers") {
  gctest::stream stream;
  gc::lean_graph graph;
  void* memory = nullptr;
  try {
    graph.capture(stream, [&](cudaStream_t) {
      const cudaError_t status = cudaMalloc(&memory, 1024);
      CHECK(status == cudaErrorStreamCaptureUnsupported);
      static_cast<void>(cudaGetLastError()); // the user saw and cleared their own error
    });
    FAIL("the invalidated capture ended without error");
  } catch (const gc::capture_error& failure) {
    CHECK(failure.code() == cudaErrorStreamCaptureInvalidated);
    CHECK_THAT(std::string(failure.what()), gctest::contains("cudaStreamEndCapture"));
    CHECK_THAT(std::string(failure.what()), gctest::contains("invalidated"));
  }
  require_recovered(graph, stream);
}

TEST_CASE("a synchronize inside the capture: capture_error, then the graph recovers") {
  gctest::stream stream;
  gc::lean_graph graph;
  CHECK_THROWS_AS(graph.capture(stream,
                                [&](cudaStream_t s) {
                                  CHECK(cudaStreamSynchronize(s) != cudaSuccess);
                                  static_cast<void>(cudaGetLastError());
                                }),
                  gc::capture_error);
  require_recovered(graph, stream);
}

TEST_CASE("forked work never joined back: capture_error that says to join it") {
  gctest::stream stream;
  gctest::stream side;
  gctest::event fork;
  gc::lean_graph graph;
  gctest::device_buffer<unsigned char> buffer(64);
  try {
    graph.capture(stream, [&](cudaStream_t s) {
      CUDA_REQUIRE(cudaEventRecord(fork, s));
      CUDA_REQUIRE(cudaStreamWaitEvent(side, fork, 0));
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), side)); // never joined
    });
    FAIL("an unjoined capture ended without error");
  } catch (const gc::capture_error& failure) {
    CHECK(failure.code() == cudaErrorStreamCaptureUnjoined);
    CHECK_THAT(std::string(failure.what()), gctest::contains("cudaStreamWaitEvent"));
  }
  CHECK_FALSE(gctest::capturing(side));
  require_recovered(graph, stream);
}

TEST_CASE("forked work joined back is captured, with both branches in the graph") {
  gctest::stream stream;
  gctest::stream side;
  gctest::event fork;
  gctest::event join;
  int counter = 0;
  gc::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaEventRecord(fork, s));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, fork, 0));
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
    CUDA_REQUIRE(cudaLaunchHostFunc(side, add_one, &counter));
    CUDA_REQUIRE(cudaEventRecord(join, side));
    CUDA_REQUIRE(cudaStreamWaitEvent(s, join, 0));
  });
  CHECK(graph.node_count() == 2);
  graph.replay(stream);
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  CHECK(counter == 2);
}

TEST_CASE("a blocking capture stream meeting legacy-stream work: capture_error with a hint") {
  gctest::stream blocking(cudaStreamDefault);
  gctest::device_buffer<unsigned char> buffer(64);
  gc::lean_graph graph;
  try {
    graph.capture(blocking, [&](cudaStream_t) {
      // work on the legacy default stream while a blocking stream captures
      static_cast<void>(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), cudaStreamLegacy));
      static_cast<void>(cudaGetLastError());
    });
    FAIL("the capture ended without error");
  } catch (const gc::capture_error& failure) {
    INFO(failure.what());
    CHECK((failure.code() == cudaErrorStreamCaptureImplicit ||
           failure.code() == cudaErrorStreamCaptureInvalidated));
    CHECK_THAT(std::string(failure.what()), gctest::contains("cudaStreamNonBlocking"));
  }
  CHECK_FALSE(gctest::capturing(blocking));
  gctest::require_no_last_error();
}

TEST_CASE("the implicit-synchronization error names cudaStreamNonBlocking") {
  const gc::capture_error failure(cudaErrorStreamCaptureImplicit, "cudaMemsetAsync",
                                  gc::detail::hint_for(cudaErrorStreamCaptureImplicit));
  CHECK_THAT(std::string(failure.what()), gctest::contains("cudaStreamNonBlocking"));
}

TEST_CASE("a stream that is already capturing cannot begin a second capture") {
  gctest::stream stream;
  gc::lean_graph outer;
  gc::lean_graph inner;
  auto cap = outer.begin_capture(stream);
  try {
    auto nested = inner.begin_capture(stream);
    FAIL("a nested capture on the same stream began");
  } catch (const gc::capture_error& failure) {
    CHECK(failure.code() != cudaSuccess);
  }
  CHECK(inner.empty());
  cap.end();
  CHECK(outer.state() == gc::graph_state::instantiated);
  gctest::require_no_last_error();
}
