// GPU test: repeated capture/replay/reset does not grow device memory. Measured device-wide
// (cudaMemGetInfo), so CTest runs it alone (RUN_SERIAL).
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"

namespace gc = graphcap;

namespace {
constexpr std::size_t n = 1000;
}

TEST_CASE("1000 capture/replay/reset cycles do not grow device memory") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  gc::lean_graph graph;
  auto cycle = [&] {
    graph.capture([&](cudaStream_t s) { gctest::launch_add_scalar(s, data.get(), 1.0F, n); });
    graph.replay(stream);
    graph.reset();
  };
  for (int i = 0; i < 20; ++i) { // warm up: lazily created runtime resources
    cycle();
  }
  stream.synchronize();
  std::size_t free_before = 0;
  std::size_t total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_before, &total));
  for (int i = 0; i < 1000; ++i) {
    cycle();
  }
  stream.synchronize();
  std::size_t free_after = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_after, &total));
  const auto grown = free_before > free_after ? free_before - free_after : 0;
  INFO("device memory grown by " << grown << " bytes");
  CHECK(grown <= 2U * 1024U * 1024U); // one allocation granule of slack, not 1000 graphs
}
