// Runtime tests: which streams capture and which replay.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

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
