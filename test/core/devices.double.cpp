// Several devices on the CUDA test double: a graph's side stream always belongs to the device
// that is current when a stream-less capture begins.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>

namespace gc = graphcap;

namespace {

/// The device of the stream the graph captured on (asked after the capture: a capturing
/// stream must not be queried).
template <class Graph, class Capture>
int capture_stream_device(Graph& graph, Capture&& capture) {
  cudaStream_t captured = nullptr;
  capture(graph, [&](cudaStream_t s) { captured = s; });
  int device = -1;
  CUDA_REQUIRE(cudaStreamGetDevice(captured, &device));
  return device;
}

} // namespace

TEST_CASE("side stream on device 0, an explicit stream on device 1, then the side stream on 1") {
  cuda_double::reset();
  cuda_double::set_device_count(2);
  gc::lean_graph graph;
  const auto on_side_stream = [](gc::lean_graph& g, auto work) { g.capture(work); };

  CUDA_REQUIRE(cudaSetDevice(0));
  CHECK(capture_stream_device(graph, on_side_stream) == 0);
  CHECK(graph.device() == 0);
  graph.reset();

  CUDA_REQUIRE(cudaSetDevice(1));
  gctest::stream stream_on_one; // created on device 1
  const auto on_explicit_stream = [&](gc::lean_graph& g, auto work) {
    g.capture(stream_on_one, work);
  };
  CHECK(capture_stream_device(graph, on_explicit_stream) == 1);
  CHECK(graph.device() == 1);
  graph.reset();

  // Device 1 is still current: the side stream (made on device 0) must be made anew on 1.
  CHECK(capture_stream_device(graph, on_side_stream) == 1);
  CHECK(graph.device() == 1);
  graph.replay();
  graph.reset();

  CUDA_REQUIRE(cudaSetDevice(0)); // and back
  CHECK(capture_stream_device(graph, on_side_stream) == 0);
  CUDA_REQUIRE(cudaSetDevice(0));
}
