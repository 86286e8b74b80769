// dynamic: graphs whose inputs change. Two tools, both in docs/dynamic.md:
//  - recapture(): capture the step again with new arguments and update the executable graph in
//    place (cudaGraphExecUpdate) instead of instantiating it anew;
//  - graph_cache: one graph per batch size, captured on first use, replayed after, bounded.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>
#include <vector>

__global__ void scale_add(const float* x, float* y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}

namespace {

constexpr int max_batch = 1 << 16;
constexpr int layers = 100;

/// One step of a model on a batch: `layers` kernels with a scale that changes between calls.
void step(cudaStream_t stream, const float* x, float* y, int batch, float scale) {
  for (int layer = 0; layer < layers; ++layer) {
    scale_add<<<(batch + 255) / 256, 256, 0, stream>>>(x, y, scale, batch);
  }
}

double host_sum(const float* device, int count) {
  std::vector<float> host(static_cast<std::size_t>(count));
  example::check(
      cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost),
      "cudaMemcpy");
  double sum = 0;
  for (const float value : host) {
    sum += value;
  }
  return sum;
}

} // namespace

int main() {
  if (!example::device_present("dynamic")) {
    return 0;
  }
  float* x = example::allocate<float>(max_batch);
  float* y = example::allocate<float>(max_batch);
  std::vector<float> ones(max_batch, 1.0F);
  example::check(cudaMemcpy(x, ones.data(), max_batch * sizeof(float), cudaMemcpyHostToDevice),
                 "cudaMemcpy");
  cudaStream_t stream = example::create_stream();

  // [recapture]
  graphcap::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { step(s, x, y, 1024, 1.0F); });
  // New arguments, same kernels: CUDA updates the executable graph in place.
  const graphcap::update_result result =
      graph.recapture(stream, [&](cudaStream_t s) { step(s, x, y, 1024, 2.0F); });
  // [/recapture]
  std::printf("dynamic: recapture of %zu nodes: %s%s%.*s\n", graph.node_count(),
              graphcap::to_string(result.outcome).data(), result.updated() ? "" : ", because ",
              static_cast<int>(result.reason.size()), result.reason.data());
  example::check(cudaMemsetAsync(y, 0, max_batch * sizeof(float), stream), "cudaMemsetAsync");
  graph.replay(stream);
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::printf("dynamic: after the replay, sum %.0f (expected %.0f)\n", host_sum(y, 1024),
              1024.0 * layers * 2.0);

  // [cache]
  // One graph per batch size, at most 4; each captured on first use after one eager warm-up.
  graphcap::graph_cache<int> graphs{{.capacity = 4, .warmup_runs = 1}};
  for (const int batch : {256, 512, 256, 1024, 512, 256, 2048, 256, 512, 4096, 256, 512}) {
    graphs.replay(batch, stream, [&](cudaStream_t s) { step(s, x, y, batch, 1.0F); });
  }
  // [/cache]
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const graphcap::graph_cache_statistics& counts = graphs.statistics();
  std::printf("dynamic: graph cache of %zu graphs: %zu hits, %zu misses, %zu evictions\n",
              graphs.size(), counts.hits, counts.misses, counts.evictions);

  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  example::check(cudaFree(x), "cudaFree");
  example::check(cudaFree(y), "cudaFree");
  return result.updated() ? 0 : 1;
}
