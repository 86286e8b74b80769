// piecewise_step: a 200-kernel step with 4 "attention" launches whose grid depends on a host
// value that changes every step (the sequence length), so no single graph can hold the step.
// graphcap::piecewise_graph captures the 196 fixed kernels as 5 graph segments and runs the 4
// attention launches eagerly between them, as islands (docs/piecewise.md). It prints the step's
// time eager and piecewise, and checks that both compute the same result; then the same step
// with the length and the buffer handed to the islands as a per-replay context, the segments
// rebound to another buffer (graphcap::rebinder), checked against the same result.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>

#include "example_support.cuh"

#include <cstdio>
#include <vector>

__global__ void layer(float* x, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    x[i] = x[i] * 0.5F + 1.0F;
  }
}

// Touches the first `length` entries: its grid is sized from a host value.
__global__ void attention(float* x, int length) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < length) {
    x[i] += 1.0F;
  }
}

namespace {

constexpr int width = 4096;
constexpr int kernels = 200;
constexpr int islands = 4;
constexpr int threads = 256;

/// Whether an attention launch follows layer k: after every 40 layers, 4 times, so that the 196
/// layers fall in 5 segments of 40, 40, 40, 40 and 36.
bool attention_after(int k) {
  return (k + 1) % 40 == 0 && k + 1 <= 40 * islands;
}

/// The sequence length of step `step`: a host value that changes every step.
int length_of(int step) {
  return 1024 + (step * 37) % 2048;
}

void launch_layer(float* x, cudaStream_t stream) {
  layer<<<(width + threads - 1) / threads, threads, 0, stream>>>(x, width);
}

void launch_attention(float* x, int length, cudaStream_t stream) {
  attention<<<(length + threads - 1) / threads, threads, 0, stream>>>(x, length);
}

/// What the islands of the rebound step get at every replay: this step's buffer and length.
struct step_values {
  float* x;
  int length;
};

/// The step, eagerly: 196 layers with an attention launch after every 40 (4 in all).
void eager_step(float* x, int length, cudaStream_t stream) {
  for (int k = 0; k < kernels - islands; ++k) {
    launch_layer(x, stream);
    if (attention_after(k)) {
      launch_attention(x, length, stream);
    }
  }
}

} // namespace

int main() {
  if (!example::device_present("piecewise_step")) {
    return 0;
  }
  cudaStream_t stream = example::create_stream();
  float* x = example::allocate<float>(width);
  constexpr int steps = 200;

  // [capture]
  int length = length_of(0); // the host value the islands read at every replay
  graphcap::piecewise_graph<> step;
  step.capture(stream, [&](auto& cap) {
    for (int k = 0; k < kernels - islands; ++k) {
      launch_layer(x, cap.stream());
      if (attention_after(k)) {
        cap.eager([&](cudaStream_t s) { launch_attention(x, length, s); }); // an island
      }
    }
  });
  // [/capture]
  std::printf("piecewise_step: %zu segments, %zu islands, %zu graph nodes\n", step.segment_count(),
              step.island_count(), step.node_count());

  // The same steps, eagerly and piecewise, from the same start: the results must agree.
  std::vector<float> eager_result(width);
  std::vector<float> piecewise_result(width);
  example::check(cudaMemsetAsync(x, 0, width * sizeof(float), stream), "cudaMemsetAsync");
  for (int s = 0; s < 10; ++s) {
    eager_step(x, length_of(s), stream);
  }
  example::check(cudaMemcpyAsync(eager_result.data(), x, width * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
  example::check(cudaMemsetAsync(x, 0, width * sizeof(float), stream), "cudaMemsetAsync");
  // [replay]
  for (int s = 0; s < 10; ++s) {
    length = length_of(s); // the islands launch with this step's length
    step.replay(stream);
  }
  // [/replay]
  example::check(cudaMemcpyAsync(piecewise_result.data(), x, width * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const bool same = eager_result == piecewise_result;

  int counter = 0;
  const double eager_us =
      example::time_us(stream, steps, [&] { eager_step(x, length_of(++counter), stream); });
  const double piecewise_us = example::time_us(stream, steps, [&] {
    length = length_of(++counter);
    step.replay(stream);
  });
  std::printf("piecewise_step: eager %.1f us per step, piecewise %.1f us (%.1fx); results %s\n",
              eager_us, piecewise_us, eager_us / piecewise_us, same ? "agree" : "DIFFER");

  // The step again, its islands handed the buffer and the length at each replay, and its
  // segments moved to another buffer by a rebinder: no recapture, no copy into `x`.
  float* x2 = example::allocate<float>(width);
  // [context]
  graphcap::piecewise_graph<graphcap::graph, step_values> moved{graphcap::keep_graph};
  moved.capture(stream, [&](auto& cap) {
    for (int k = 0; k < kernels - islands; ++k) {
      launch_layer(x, cap.stream());
      if (attention_after(k)) {
        cap.eager([](cudaStream_t s, step_values& now) { launch_attention(now.x, now.length, s); });
      }
    }
  });
  // [/context]
  example::check(cudaMemsetAsync(x2, 0, width * sizeof(float), stream), "cudaMemsetAsync");
  // [rebind]
  graphcap::rebinder inputs{moved, {x}}; // x, wherever a segment holds it
  inputs.rebind(x, x2);                  // every segment that reads x reads x2 now
  for (int s = 0; s < 10; ++s) {
    moved.replay(stream, step_values{x2, length_of(s)}); // the islands read x2 too
  }
  // [/rebind]
  example::check(cudaMemcpyAsync(piecewise_result.data(), x2, width * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const bool rebound_same = eager_result == piecewise_result;
  std::printf("piecewise_step: rebound to a new buffer, %zu nodes patched; results %s\n",
              inputs.node_count(), rebound_same ? "agree" : "DIFFER");

  example::check(cudaFree(x2), "cudaFree");
  example::check(cudaFree(x), "cudaFree");
  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return same && rebound_same ? 0 : 1;
}
