#include "checks.hpp"
#include "liveness_checks.hpp"

// CCCL ships with the toolkit and is on nvcc's include path: its stream types are taken wherever
// graphcap takes a cudaStream_t.
#include <cuda/stream_ref>

static_assert(graphcap::stream_wrapper<cuda::stream_ref>);
static_assert(!graphcap::stream_wrapper<cudaStream_t>);
static_assert(requires(graphcap::lean_graph & graph, cuda::stream_ref stream) {
  graph.replay(stream);
  graph.upload(stream);
  graph.begin_capture(stream);
  graph.capture(stream, [](cudaStream_t) {});
  graph.recapture(stream, [](cudaStream_t) {});
});
// The one stream parameter type takes CCCL's stream_ref implicitly, and costs one pointer.
static_assert(std::is_convertible_v<cuda::stream_ref, graphcap::stream_ref>);
static_assert(sizeof(graphcap::stream_ref) == sizeof(cudaStream_t));

int main() {
  return 0;
}
