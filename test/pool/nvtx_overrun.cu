// nvtx_overrun: a kernel writes one element past the end of a block from a graph's pool. The
// write stays inside the pool's slab (one CUDA allocation), so without graphcap's NVTX regions
// compute-sanitizer would see nothing wrong. scripts/sanitize.sh runs this under
// `compute-sanitizer --tool memcheck --nvtx yes` and requires an error report. Built with
// GRAPHCAP_NVTX_REGIONS (opt-in).
#include <graphcap/graphcap.hpp>

#include <cstdio>

__global__ void fill_one_too_many(float* block, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= count) { // the bug: <= writes block[count]
    block[i] = 1.0F;
  }
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("nvtx_overrun: no CUDA device; not run\n");
    return 77;
  }
  constexpr int count = 128; // 512 bytes: exactly one size class, the slab's first block
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    return 1;
  }
  // Two graphs, one after the other: the second's slab is taken after the first's was freed
  // (often at the same address), which is where compute-sanitizer has rejected registrations.
  for (int round = 0; round < 2; ++round) {
    graphcap::graph graph;
    graph.capture([&](graphcap::graph::scope& cap) {
      float* block = cap.allocate<float>(count);
      fill_one_too_many<<<1, 256, 0, cap.stream()>>>(block, count);
    });
    graph.replay(stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess) {
      return 1;
    }
  }
  std::printf("nvtx_overrun: replayed two graphs that write 4 bytes past their block\n");
  return cudaStreamDestroy(stream) == cudaSuccess ? 0 : 1;
}
