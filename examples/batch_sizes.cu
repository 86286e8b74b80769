// batch_sizes: a server's decode step for any batch size, with one graph per bucket. The
// buckets (1, 2, 4, 8, then every 8 up to 256) are captured once, largest first, into one shared
// pool (graphcap::graph_family, docs/families.md); each request is padded up to its bucket and
// that bucket's graph replayed. At the end the family prints its report.
#include <graphcap/family.hpp>

#include "example_support.cuh"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

__global__ void layer(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    out[i] = in[i] + 1.0F;
  }
}

namespace {

constexpr int hidden = 4096;
constexpr int layers = 32;
constexpr std::size_t max_batch = 256;

/// The model's step for `batch` rows: reads `input`, writes `output`, temporaries from the pool.
void forward(graphcap::shared_pool_graph::scope& cap, std::size_t batch, const float* input,
             float* output) {
  const int n = static_cast<int>(batch) * hidden;
  const float* activation = input;
  for (int l = 0; l < layers; ++l) {
    float* next = l + 1 == layers ? output : cap.allocate<float>(static_cast<std::size_t>(n));
    layer<<<(n + 255) / 256, 256, 0, cap.stream()>>>(activation, next, n);
    if (activation != input) {
      cap.deallocate(const_cast<float*>(activation)); // freed: the next layer may reuse it
    }
    activation = next;
  }
}

} // namespace

int main() {
  if (!example::device_present("batch_sizes")) {
    return 0;
  }
  cudaStream_t stream = example::create_stream();
  float* input = example::allocate<float>(max_batch * hidden);
  float* output = example::allocate<float>(max_batch * hidden);
  example::check(cudaMemset(input, 0, max_batch * hidden * sizeof(float)), "cudaMemset");

  // [capture]
  std::vector<std::size_t> buckets{1, 2, 4};
  for (std::size_t size = 8; size <= max_batch; size += 8) {
    buckets.push_back(size);
  }
  graphcap::graph_family<> family{{.warmup_runs = 0, .time_budget = std::chrono::seconds(30)}};
  const auto captured = family.capture_all(
      buckets, stream, [&](std::size_t batch, graphcap::shared_pool_graph::scope& cap) {
        forward(cap, batch, input, output);
      });
  if (!captured.complete()) {
    std::fprintf(stderr, "batch_sizes: %zu buckets not captured, %zu failed\n",
                 captured.not_captured.size(), captured.failures.size());
  }
  // [/capture]

  // [serve]
  std::mt19937 random{18};
  std::uniform_int_distribution<std::size_t> request_size{1, max_batch};
  std::size_t padded_rows = 0;
  std::size_t requested_rows = 0;
  for (int request = 0; request < 1000; ++request) {
    const std::size_t rows = request_size(random);
    // The smallest bucket >= rows: fill rows..bucket-1 of the input with padding, replay.
    const std::size_t bucket = family.replay_at_least(rows, stream);
    requested_rows += rows;
    padded_rows += bucket - rows;
  }
  // [/serve]
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  std::vector<float> host(hidden);
  example::check(cudaMemcpy(host.data(), output, hidden * sizeof(float), cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
  std::printf("batch_sizes: %zu buckets captured in %.1f ms; 1000 requests, %zu rows, %zu rows "
              "of padding (%.1f%%); output[0] = %.0f (expected %d)\n",
              family.size(), std::chrono::duration<double, std::milli>(captured.elapsed).count(),
              requested_rows, padded_rows,
              100.0 * static_cast<double>(padded_rows) /
                  static_cast<double>(requested_rows + padded_rows),
              host[0], layers);
  // [report]
  std::cout << family; // per bucket: capture and instantiate time, nodes, pool bytes, replays
  // [/report]

  example::check(cudaFree(input), "cudaFree");
  example::check(cudaFree(output), "cudaFree");
  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return host[0] == static_cast<float>(layers) && captured.complete() ? 0 : 1;
}
