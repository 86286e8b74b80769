// examples/first/first.cu - graphcap's first program (README.md): capture ten kernels once,
// replay them as one graph launch a step.
#include <graphcap/graphcap.hpp>

#include <cstdio>
#include <vector>

__global__ void add(float* y, const float* x, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    y[i] += x[i];
  }
}

int main() try {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("first: no CUDA device present; built, not run.\n");
    return 0;
  }
  constexpr int n = 1 << 16;
  const std::vector<float> ones(n, 1.0F);
  float* x = nullptr;
  float* y = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemcpy(x, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(y, 0, n * sizeof(float));
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);

  graphcap::lean_graph graph;         // every optional feature off
  graph.capture([&](cudaStream_t s) { // captured once on graphcap's own stream; nothing runs
    for (int k = 0; k < 10; ++k) {
      add<<<(n + 255) / 256, 256, 0, s>>>(y, x, n);
    }
  });
  for (int step = 0; step < 100; ++step) {
    graph.replay(stream); // one cudaGraphLaunch: the ten kernels
  }
  float last = 0.0F;
  cudaMemcpyAsync(&last, y + n - 1, sizeof last, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  std::printf(
      "first: a graph of %zu kernels, replayed 100 times: y[n - 1] = %.0f (1000 expected)\n",
      graph.node_count(), last);
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(y);
  return last == 1000.0F ? 0 : 1;
} catch (const graphcap::error& e) { // cuda_error, capture_error, state_error, ...
  std::printf("first: %s\n", e.what());
  return 1;
}
