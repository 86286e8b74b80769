// Fault injection on the test double: the CUDA calls a recapture makes before it releases
// anything (the device it notes, the stream's capture status) fail; the recapture is refused
// with a typed error and the graph keeps its executable, template and pool blocks
// (test/core/refused_recapture.cpp has the refusals on both backends).
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gc = graphcap;

TEST_CASE("a recapture whose checks fail in CUDA is refused before anything is released") {
  constexpr std::size_t bytes = 4096;
  cuda_double::reset();
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  gc::graph graph;
  unsigned char* const block = gctest::capture_fill(graph, host, 4);
  const char* const failing = GENERATE(as<const char*>{}, "cudaGetDevice", "cudaStreamIsCapturing");
  INFO(failing << " fails");
  cuda_double::fail_call(failing, cudaErrorUnknown);
  bool ran = false;
  CHECK_THROWS_AS(graph.recapture(stream, [&](cudaStream_t /*stream*/) { ran = true; }),
                  gc::cuda_error);
  static_cast<void>(cudaGetLastError());
  CHECK_FALSE(ran);
  CHECK_FALSE(gctest::capturing(stream));
  CHECK(graph.state() == gc::graph_state::instantiated);
  CHECK(graph.node_count() == 2);
  CHECK(graph.pool_statistics().blocks_in_use == 1);
  std::fill(host.begin(), host.end(), 0);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 4));
  unsigned char* again = nullptr; // and the next recapture gets the same block, updated in place
  const gc::update_result result = graph.recapture(stream, [&](gc::graph::scope& cap) {
    again = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(again, 5, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), again, bytes, cudaMemcpyDeviceToHost, cap.stream()));
  });
  CHECK(result.updated());
  CHECK(again == block);
}
