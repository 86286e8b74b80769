// benchmark/probes/parallel_instantiate.cu - what a family's wake could cost at best.
// bench_family_memory's wake (restore_executables() of 64 keys of 202 nodes, then a replay each)
// reads 0.44-0.48x capturing them again on an H100 (#46's goal: <= 0.1x). Instantiation is most
// of a wake; this probe asks (raw CUDA, 64 templates of 202 nodes: a memset, 200 kernels, one
// more kernel, as bench_family_memory's step):
//  1. capture of the 64 templates, their instantiation by one thread, and both together: the
//     floor of a wake by instantiation against capturing again (median of 5 rounds);
//  2. the 64 instantiations spread over 2, 4 and 8 host threads: whether the driver runs them
//     side by side (the executables destroyed between rounds);
//  3. cudaGraphExecUpdate of one executable from each template in turn, against instantiating
//     each: what one executable per topology pays per key instead.
#include <cuda_runtime.h>

#include "probe_support.hpp"

#include <cstdio>
#include <thread>
#include <vector>

namespace {

__global__ void layer(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    out[i] = in[i] + 1.0F;
  }
}

constexpr int keys = 64;
constexpr int layers = 200;

cudaGraph_t capture_key(cudaStream_t stream, float* a, float* b, int key) {
  const int n = (key + 1) * 8 * 1024;
  cudaGraph_t graph = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  cudaMemsetAsync(a, 0, sizeof(float) * n, stream);
  for (int l = 0; l < layers; ++l) {
    layer<<<(n + 255) / 256, 256, 0, stream>>>(l % 2 == 0 ? a : b, l % 2 == 0 ? b : a, n);
  }
  layer<<<1, 1, 0, stream>>>(a, b, 1);
  cudaStreamEndCapture(stream, &graph);
  return graph;
}

} // namespace

int main() {
  if (!probe::device_present("parallel_instantiate")) {
    return 0;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("parallel_instantiate: %s, %d templates of %d nodes, %u host threads\n", prop.name,
              keys, layers + 2, std::thread::hardware_concurrency());
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  float* a = nullptr;
  float* b = nullptr;
  cudaMalloc(&a, sizeof(float) * keys * 8 * 1024);
  cudaMalloc(&b, sizeof(float) * keys * 8 * 1024);

  std::vector<cudaGraph_t> templates(keys);
  std::vector<cudaGraphExec_t> execs(keys);
  const auto destroy_execs = [&] {
    for (cudaGraphExec_t& e : execs) {
      if (e != nullptr) {
        cudaGraphExecDestroy(e);
      }
      e = nullptr;
    }
  };
  std::vector<double> capture_ms, instantiate_ms, both_ms;
  std::vector<std::vector<double>> spread_ms(4);
  std::vector<double> update_ms;
  const int threads[] = {1, 2, 4, 8};
  for (int round = 0; round < 6; ++round) {
    for (cudaGraph_t& g : templates) {
      if (g != nullptr) {
        cudaGraphDestroy(g);
      }
    }
    auto start = probe::clock_type::now();
    for (int k = 0; k < keys; ++k) {
      templates[k] = capture_key(stream, a, b, k);
    }
    const double captured = probe::millis(start);
    for (int t = 0; t < 4; ++t) {
      destroy_execs();
      start = probe::clock_type::now();
      std::vector<std::thread> crew;
      for (int w = 0; w < threads[t]; ++w) {
        crew.emplace_back([&, w] {
          for (int k = w; k < keys; k += threads[t]) {
            cudaGraphInstantiate(&execs[k], templates[k], 0);
          }
        });
      }
      for (std::thread& worker : crew) {
        worker.join();
      }
      const double spread = probe::millis(start);
      if (round > 0) {
        spread_ms[t].push_back(spread);
      }
    }
    // One executable updated from each template in turn (then a launch, as a switch would).
    start = probe::clock_type::now();
    int refused = 0;
    for (int k = 0; k < keys; ++k) {
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(execs[0], templates[k], &info) != cudaSuccess) {
        ++refused;
        cudaGetLastError();
      }
      cudaGraphLaunch(execs[0], stream);
    }
    cudaStreamSynchronize(stream);
    const double updated = probe::millis(start);
    if (round > 0) {
      capture_ms.push_back(captured);
      instantiate_ms.push_back(spread_ms[0].back());
      both_ms.push_back(captured + spread_ms[0].back());
      update_ms.push_back(updated);
    }
    if (refused > 0) {
      std::printf("  round %d: %d updates refused\n", round, refused);
    }
  }
  const double both = probe::median(both_ms);
  std::printf("  capture of %d templates            %8.2f ms\n", keys, probe::median(capture_ms));
  std::printf("  instantiation, 1 thread            %8.2f ms  (%.3fx capture + instantiation)\n",
              probe::median(instantiate_ms), probe::median(instantiate_ms) / both);
  for (int t = 1; t < 4; ++t) {
    std::printf("  instantiation, %d threads           %8.2f ms  (%.3fx capture + instantiation, "
                "%.2fx one thread)\n",
                threads[t], probe::median(spread_ms[t]), probe::median(spread_ms[t]) / both,
                probe::median(instantiate_ms) / probe::median(spread_ms[t]));
  }
  std::printf("  one executable updated from each   %8.2f ms  (%.3fx capture + instantiation; "
              "launches included)\n",
              probe::median(update_ms), probe::median(update_ms) / both);
  const cudaError_t status = cudaGetLastError();
  std::printf("parallel_instantiate: %s\n", cudaGetErrorName(status));
  destroy_execs();
  for (cudaGraph_t g : templates) {
    cudaGraphDestroy(g);
  }
  cudaFree(a);
  cudaFree(b);
  cudaStreamDestroy(stream);
  return 0;
}
