// Runtime tests: which streams capture and which replay.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <type_traits>

namespace gc = graphcap;

namespace {
void CUDART_CB add_one(void* counter) {
  ++*static_cast<int*>(counter);
}
} // namespace

TEST_CASE("replay on the legacy default stream, the per-thread stream and a user stream") {
  gctest::stream stream;
  int counter = 0;
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter)); });
  graph.replay(); // the default stream
  graph.replay(cudaStreamLegacy);
  graph.replay(cudaStreamPerThread);
  graph.replay(stream);
  CUDA_REQUIRE(cudaStreamSynchronize(cudaStreamLegacy));
  CUDA_REQUIRE(cudaStreamSynchronize(cudaStreamPerThread));
  stream.synchronize();
  CHECK(counter == 4);
}

TEST_CASE("cudaStreamPerThread can be captured: only 0 and cudaStreamLegacy are refused") {
  int counter = 0;
  gc::lean_graph graph;
  graph.capture(cudaStreamPerThread, [&](cudaStream_t s) {
    CHECK(s == cudaStreamPerThread);
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
  });
  graph.replay(cudaStreamPerThread);
  CUDA_REQUIRE(cudaStreamSynchronize(cudaStreamPerThread));
  CHECK(counter == 1);
}

TEST_CASE("without a stream, the capture runs on the graph's own non-blocking side stream") {
  gc::lean_graph graph;
  cudaStream_t seen = nullptr;
  graph.capture([&](cudaStream_t s) { seen = s; });
  REQUIRE(seen != nullptr);
  CHECK_FALSE(gc::is_legacy_default_stream(seen));
  unsigned int flags = 0;
  CUDA_REQUIRE(cudaStreamGetFlags(seen, &flags));
  CHECK((flags & cudaStreamNonBlocking) != 0);
  graph.reset();
  cudaStream_t again = nullptr;
  graph.capture([&](cudaStream_t s) { again = s; });
  CHECK(again == seen); // reused across captures
}

TEST_CASE("the graph records its capture device") {
  int device = -1;
  CUDA_REQUIRE(cudaGetDevice(&device));
  gc::lean_graph graph;
  graph.capture([](cudaStream_t) {});
  CHECK(graph.device() == device);
}

namespace {
/// A stream class of the kind libraries have (cuda::stream_ref, cuda-api-wrappers): get().
class wrapped_stream {
public:
  explicit wrapped_stream(cudaStream_t stream) noexcept : stream_(stream) {}
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }

private:
  cudaStream_t stream_;
};
} // namespace

TEST_CASE("stream objects with get() are taken wherever a cudaStream_t is") {
  STATIC_REQUIRE(graphcap::stream_wrapper<wrapped_stream>);
  gctest::stream raw;
  const wrapped_stream stream{raw};
  int counter = 0;
  graphcap::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    CHECK(s == static_cast<cudaStream_t>(raw));
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
  });
  graph.upload(stream);
  graph.replay(stream);
  raw.synchronize();
  CHECK(counter == 1);
  const auto result = graph.recapture(
      stream, [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter)); });
  CHECK(result.updated());
  auto cap = graph.begin_recapture(stream);
  CHECK(cap.stream() == static_cast<cudaStream_t>(raw));
  CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), add_one, &counter));
  cap.end();
  graph.replay(stream);
  raw.synchronize();
  CHECK(counter == 2);
}

TEST_CASE("one stream type: a stream object works for allocate, make_buffer, deallocate, caches") {
  STATIC_REQUIRE(sizeof(graphcap::stream_ref) == sizeof(cudaStream_t));
  STATIC_REQUIRE(std::is_trivially_copyable_v<graphcap::stream_ref>);
  gctest::stream raw;
  const wrapped_stream stream{raw};
  graphcap::graph graph;
  graph.capture(stream, [&](graphcap::graph::scope& cap) {
    float* temporary = cap.allocate<float>(16, stream); // for work on a (forked) stream object
    cap.deallocate(temporary, stream);
    const graphcap::buffer<float> kept = cap.make_buffer<float>(16, stream);
    CHECK(kept.size() == 16);
    CHECK(kept.data() == temporary); // the freed block, reused: same stream, same size
  });
  graphcap::graph_cache<int> cache;
  int counter = 0;
  cache.replay(1, stream, [&](cudaStream_t s) {
    CHECK(s == static_cast<cudaStream_t>(raw));
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
  });
  cache.replay(1, stream, [](cudaStream_t) { FAIL("a cached key must not capture again"); });
  raw.synchronize();
  CHECK(counter == 2);
  CHECK(cache.statistics().hits == 1);
}
