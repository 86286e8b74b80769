// diagnostics: find the call that broke a capture. A step that synchronizes its stream (a debug
// check left in, a library that waits) invalidates the capture around it; CUDA only says
// "invalidated" at the capture's end. With graphcap::capture_diagnostics on, the capture_error
// names the call, its place in the capture, its thread and the annotation scope it was made in.
//
// <graphcap/diagnostics.hpp> links CUPTI (target graphcap::annotations). Without a GPU this
// example builds and says so.
#include <graphcap/annotations.hpp>
#include <graphcap/diagnostics.hpp>
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>
#include <optional>

namespace {

constexpr int n = 1 << 16;

__global__ void scale(float* x, float factor, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    x[i] *= factor;
  }
}

/// A step with a debugging check left in: fine when run eagerly, fatal inside a capture.
void attention(cudaStream_t stream, float* x) {
  scale<<<(n + 255) / 256, 256, 0, stream>>>(x, 0.5F, n);
  static_cast<void>(cudaStreamSynchronize(stream)); // "did the kernel fail?"
}

} // namespace

int main() {
  if (!example::device_present("diagnostics")) {
    return 0;
  }
  float* x = example::allocate<float>(n);
  cudaStream_t stream = example::create_stream();
  using annotated_graph = graphcap::graph_with<graphcap::annot::on>;

  // [diagnose]
  const graphcap::capture_diagnostics diagnostics; // on while it lives; outside any capture
  if (!diagnostics.available()) {
    std::printf("%s\n", diagnostics.unavailable_reason().c_str()); // another tool holds CUPTI
  }
  annotated_graph graph;
  try {
    graph.capture(stream, [&](annotated_graph::scope& cap) {
      const auto scope = cap.mark("attention");
      attention(cap.stream(), x);
    });
  } catch (const graphcap::capture_error& error) {
    std::printf("%s\n", error.what()); // "... invalidated by cudaStreamSynchronize (call N ..."
    if (const std::optional<graphcap::offending_call> call =
            graphcap::capture_diagnostics::last_offending_call()) {
      std::printf("culprit: %s, call %llu, thread %u, scope '%s'\n", call->function.c_str(),
                  static_cast<unsigned long long>(call->ordinal), call->thread,
                  call->scope.c_str());
    }
  }
  // [/diagnose]

  static_cast<void>(cudaGetLastError());
  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  example::check(cudaFree(x), "cudaFree");
  return 0;
}
