// cublas_chain: a chain of cuBLAS GEMMs captured into one graph, checked against the same chain
// run eagerly.
//
// Two things make cuBLAS capturable: cublasSetStream to the capture stream, then
// cublasSetWorkspace with memory that stays valid for every replay (here from the graph's pool;
// memory allocated before the capture works too). cublasSetStream resets the workspace to
// cuBLAS's own, so the order matters. The activations between the GEMMs are pool temporaries
// too: each is given back once the next GEMM has read it, so the chain needs two of them
// whatever its length.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, cublasGetStatusName(status));
    std::exit(EXIT_FAILURE);
  }
}

constexpr int n = 512;                                    // square matrices, column-major
constexpr int layers = 16;                                // GEMMs in the chain
constexpr std::size_t workspace_bytes = 32 * 1024 * 1024; // cuBLAS's advice for Hopper

/// out = weight * in (n x n each), scaled so that the values keep their magnitude along the
/// chain (the weights are uniform in [-1, 1], of variance 1/3).
void gemm(cublasHandle_t handle, const float* weight, const float* in, float* out) {
  const float alpha = std::sqrt(3.0F / static_cast<float>(n));
  const float beta = 0.0F;
  check_cublas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, weight, n, in, n,
                           &beta, out, n),
               "cublasSgemm");
}

std::vector<float> to_host(const float* device, std::size_t count) {
  std::vector<float> host(count);
  example::check(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
  return host;
}

} // namespace

int main() {
  if (!example::device_present("cublas_chain")) {
    return 0;
  }
  constexpr std::size_t elements = std::size_t{n} * n;
  // Inputs, allocated before any capture: the weights of every layer and the first activation.
  std::vector<float> host(elements * (layers + 1));
  for (std::size_t i = 0; i < host.size(); ++i) {
    host[i] = static_cast<float>((i * 2654435761U) % 2001) / 1000.0F - 1.0F; // in [-1, 1]
  }
  float* weights = example::allocate<float>(host.size());
  example::check(
      cudaMemcpy(weights, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
      "cudaMemcpy");
  const float* input = weights + elements * layers;

  cublasHandle_t handle = nullptr;
  check_cublas(cublasCreate(&handle), "cublasCreate");
  cudaStream_t stream = example::create_stream();

  // Eager: the chain on `stream`, with a workspace of the same size as the graph's.
  void* eager_workspace = example::allocate<unsigned char>(workspace_bytes);
  float* eager[2] = {example::allocate<float>(elements), example::allocate<float>(elements)};
  auto eager_chain = [&] {
    const float* current = input;
    for (int layer = 0; layer < layers; ++layer) {
      gemm(handle, weights + elements * layer, current, eager[layer % 2]);
      current = eager[layer % 2];
    }
    return current;
  };
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  check_cublas(cublasSetWorkspace(handle, eager_workspace, workspace_bytes), "cublasSetWorkspace");
  const float* eager_output = eager_chain(); // also the warm-up: cuBLAS loads its kernels
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::vector<float> expected = to_host(eager_output, elements);

  // [cublas-capture]
  graphcap::graph graph; // global capture mode: a cudaMalloc inside would invalidate it
  const float* output = graph.capture([&](graphcap::graph::scope& cap) {
    check_cublas(cublasSetStream(handle, cap.stream()), "cublasSetStream"); // first: it resets
    void* workspace = cap.allocate<unsigned char>(workspace_bytes);         // the workspace
    check_cublas(cublasSetWorkspace(handle, workspace, workspace_bytes), "cublasSetWorkspace");
    const float* current = input;
    for (int layer = 0; layer < layers; ++layer) {
      float* next = cap.allocate<float>(elements); // reuses the block given back two layers ago
      gemm(handle, weights + elements * layer, current, next);
      if (current != input) {
        cap.deallocate(current); // read by the GEMM just captured: free for later allocations
      }
      current = next;
    }
    return current; // the graph's output: fixed address, valid while the graph lives
  });
  // The handle must not keep the graph's workspace: back to the eager stream and workspace.
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  check_cublas(cublasSetWorkspace(handle, eager_workspace, workspace_bytes), "cublasSetWorkspace");
  // [/cublas-capture]

  graph.replay(stream);
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::vector<float> replayed = to_host(output, elements);
  double largest = 0.0;
  double worst = 0.0;
  for (std::size_t i = 0; i < elements; ++i) {
    largest = std::max(largest, std::fabs(static_cast<double>(expected[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(replayed[i]) - expected[i]));
  }
  worst /= largest; // relative to the output's scale (about 1)
  const graphcap::pool_statistics pool = graph.pool_statistics();
  std::printf("cublas_chain: %d GEMMs of %dx%d in a graph of %zu nodes; the pool holds %zu blocks "
              "(%zu bytes)\n",
              layers, n, n, graph.node_count(), pool.blocks_in_use, pool.in_use_bytes);
  std::printf("  replay against eager: largest relative difference %.3g\n", worst);
  if (!(worst <= 1e-4)) { // also catches NaN
    std::fprintf(stderr, "cublas_chain: the replay differs from the eager chain\n");
    return EXIT_FAILURE;
  }

  constexpr int steps = 200;
  const double eager_us = example::time_us(stream, steps, [&] { eager_chain(); });
  const double replay_us = example::time_us(stream, steps, [&] { graph.replay(stream); });
  std::printf("  eager chain: %8.2f us, graph replay: %8.2f us\n", eager_us, replay_us);

  graph.reset(); // the pool goes back ordered after the last replay: on `stream`, still alive
  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  check_cublas(cublasDestroy(handle), "cublasDestroy");
  example::check(cudaFree(eager_workspace), "cudaFree");
  example::check(cudaFree(eager[0]), "cudaFree");
  example::check(cudaFree(eager[1]), "cudaFree");
  example::check(cudaFree(weights), "cudaFree");
  return 0;
}
