// A user's test of their own graph code on the CUDA test double (graphcap::cuda_double), no GPU
// needed: a .cu file with a kernel, linked against the double instead of libcudart. The kernel
// gets a host model; graphcap captures its launch and replays the graph twice, with
// liveness::check scanning the kernel node's parameters. Exits 1 on a wrong value.
#include <graphcap/graphcap.hpp>

#include <cuda_double/control.hpp>
#include <cuda_double/kernels.hpp>

#include <cstdio>

__global__ void add(int* data, int value, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    data[i] += value;
  }
}

int main() {
  // The kernel's model: the whole grid's work, on the host (the double's device memory is
  // host memory).
  cuda_double::emulate_kernel(&add, [](int* data, int value, int n) {
    for (int i = 0; i < n; ++i) {
      data[i] += value;
    }
  });
  constexpr int n = 256;
  int* data = nullptr;
  if (cudaMalloc(&data, n * sizeof(int)) != cudaSuccess || cudaMemset(data, 0, n * sizeof(int))) {
    std::printf("consumer_on_double: cudaMalloc or cudaMemset failed\n");
    return 1;
  }
  int value = 7;
  graphcap::graph_with<graphcap::liveness::check> graph;
  graph.capture([&](cudaStream_t stream) { add<<<1, n, 0, stream>>>(data, value, n); });
  value = 100; // the node holds the value copied at the launch
  graph.replay();
  graph.replay();
  int last = 0;
  cudaMemcpy(&last, data + n - 1, sizeof last, cudaMemcpyDeviceToHost);
  const std::size_t inputs = graph.liveness_policy().input_count();
  const std::size_t runs = cuda_double::kernel_runs(&add);
  cudaFree(data);
  if (last != 14 || runs != 2 || inputs != 1 || graph.node_count() != 1) {
    std::printf("consumer_on_double: wrong: data[%d] = %d (14), %zu run(s) (2), %zu input(s) (1)\n",
                n - 1, last, runs, inputs);
    return 1;
  }
  std::printf("consumer_on_double: a captured kernel replayed twice on the double: data[%d] = %d\n",
              n - 1, last);
  return 0;
}
