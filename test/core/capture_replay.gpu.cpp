// GPU tests: real kernels captured and replayed (PyTorch's core graph scenarios). The kernels
// live in kernels.cu; this file is plain C++.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"

namespace gc = graphcap;

namespace {
constexpr std::size_t n = 1000;
}

TEST_CASE("capture 10 increments of a buffer of ones, replay once: sum 11000") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  gctest::launch_fill(stream, data.get(), 1.0F, n);
  stream.synchronize();

  gc::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    for (int i = 0; i < 10; ++i) {
      gctest::launch_add_scalar(s, data.get(), 1.0F, n);
    }
  });
  CHECK(graph.node_count() == 10);
  CHECK(gctest::sum(data.get(), n) == 1000.0); // capturing ran nothing
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 11000.0);
  gctest::require_no_last_error();
}

TEST_CASE("reset and recapture a different computation") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  gctest::launch_fill(stream, data.get(), 1.0F, n);
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) {
    for (int i = 0; i < 10; ++i) {
      gctest::launch_add_scalar(s, data.get(), 1.0F, n);
    }
  });
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 11000.0);
  graph.reset();
  graph.capture([&](cudaStream_t s) {
    for (int i = 0; i < 10; ++i) {
      gctest::launch_add_scalar(s, data.get(), 2.0F, n);
    }
  });
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 31000.0);
}

TEST_CASE("timing events recorded inside the graph report elapsed time after a replay") {
  gctest::stream stream;
  gctest::event start(cudaEventDefault);
  gctest::event stop(cudaEventDefault);
  gc::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaEventRecordWithFlags(start, s, cudaEventRecordExternal));
    gctest::launch_spin(s, 1'000'000);
    CUDA_REQUIRE(cudaEventRecordWithFlags(stop, s, cudaEventRecordExternal));
  });
  graph.replay(stream);
  stream.synchronize();
  float milliseconds = 0.0F;
  CUDA_REQUIRE(cudaEventElapsedTime(&milliseconds, start, stop));
  CHECK(milliseconds > 0.0F);
}

TEST_CASE("each mode captures and replays kernels") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  gctest::launch_fill(stream, data.get(), 0.0F, n);
  auto add_one = [&](cudaStream_t s) { gctest::launch_add_scalar(s, data.get(), 1.0F, n); };
  gc::graph_with<gc::mode::global> global;
  gc::graph_with<gc::mode::thread_local_> local;
  gc::graph_with<gc::mode::relaxed> relaxed;
  global.capture(stream, add_one);
  local.capture(stream, add_one);
  relaxed.capture(stream, add_one);
  global.replay(stream);
  local.replay(stream);
  relaxed.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 3000.0);
}
