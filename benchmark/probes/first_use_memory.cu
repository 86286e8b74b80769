// Probe (kept, issue #46's ledger): what a fresh process's first uses of CUDA take from
// cudaMemGetInfo's free figure, before and apart from any graph's own memory. The ledger test
// "family ledger adds up" measures a family's drop in a fresh process (ctest runs each test case
// alone); on an H100 the drop exceeded the ledger by 32 MiB with nothing else on the device.
//
// Run as `first_use_memory raw` (raw calls first, then a family as the test builds it) and
// `first_use_memory family` (the family first). Each step prints the free figure's drop since
// the step before, in MiB, after a cudaDeviceSynchronize.
//
//   nvcc -std=c++20 -arch=sm_90 -Iinclude -o first_use_memory first_use_memory.cu
#include <graphcap/family.hpp>

#include "memory_steps.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;
using probe::free_bytes;
using probe::last_free;
using probe::step;

void raw_steps(cudaStream_t stream, unsigned char* device, unsigned char* host) {
  cudaMemsetAsync(device, 1, bytes, stream);
  step("eager memset");
  cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream);
  step("eager copy to pageable host memory");
  for (int round = 0; round < 2; ++round) {
    cudaGraph_t graph = nullptr;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    cudaMemsetAsync(device, 2, bytes, stream);
    cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream);
    cudaStreamEndCapture(stream, &graph);
    step(round == 0 ? "first capture (memset + copy)" : "second capture");
    cudaGraphExec_t exec = nullptr;
    cudaGraphInstantiate(&exec, graph, 0);
    step(round == 0 ? "first instantiate" : "second instantiate");
    cudaGraphLaunch(exec, stream);
    step(round == 0 ? "first launch" : "second launch");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    step("destroy both");
  }
}

void family_steps(cudaStream_t stream, std::vector<unsigned char>& host) {
  gc::graph_family<> family;
  const auto work = [&](std::size_t key, gc::shared_pool_graph::scope& cap) {
    auto* temporary = cap.allocate<unsigned char>(bytes * key);
    cudaMemsetAsync(temporary, static_cast<int>(key), bytes * key, cap.stream());
    for (std::size_t i = 0; i < 20 * key; ++i) {
      cudaMemcpyAsync(host.data(), temporary, bytes, cudaMemcpyDeviceToHost, cap.stream());
    }
    cap.deallocate(temporary);
  };
  const long long before = free_bytes();
  const bool complete = family.capture_all({1, 2, 4, 8}, stream, work).complete();
  step("family capture_all({1, 2, 4, 8}) as the ledger test");
  const auto ledger = family.ledger();
  std::printf("  family: complete %d, drop %.2f MiB, ledger total %.2f MiB (pool %.2f, "
              "executables %.2f)\n",
              complete ? 1 : 0, static_cast<double>(before - last_free) / (1024.0 * 1024.0),
              static_cast<double>(ledger.total_bytes()) / (1024.0 * 1024.0),
              static_cast<double>(ledger.pool_reserved_bytes) / (1024.0 * 1024.0),
              static_cast<double>(ledger.executable_bytes) / (1024.0 * 1024.0));
  if (complete) {
    family.replay_at_least(8, stream);
  }
  step("family replay of key 8");
}

} // namespace

int main(int argc, char** argv) {
  const bool family_first = argc > 1 && std::strcmp(argv[1], "family") == 0;
  std::printf("first_use_memory: %s first\n", family_first ? "family" : "raw calls");
  cudaFree(nullptr);
  last_free = free_bytes();
  std::printf("  context created, free %.2f MiB\n", static_cast<double>(last_free) / 1048576.0);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  step("non-blocking stream");
  unsigned char* device = nullptr;
  cudaMalloc(&device, bytes);
  step("cudaMalloc of 4 KiB");
  std::vector<unsigned char> host(bytes, 0);
  if (family_first) {
    family_steps(stream, host);
    raw_steps(stream, device, host.data());
  } else {
    raw_steps(stream, device, host.data());
    family_steps(stream, host);
  }
  cudaFree(device);
  cudaStreamDestroy(stream);
  std::printf("first_use_memory: last error %s\n", cudaGetErrorName(cudaGetLastError()));
  return 0;
}
