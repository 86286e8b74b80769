// Probe (kept, issue #46 item 4): does graphcap's squeeze_executable_cache()
// (cuda/detail/executable_cache.hpp, what release_executables(executable_memory::give_back)
// calls) give the driver's cached executable memory back, how much, how fast, and with every
// other executable alive, which pieces stay. Steps, each with cudaMemGetInfo's held figure
// against the start: 16 executables of 4,000 kernel nodes instantiated; half destroyed; squeeze;
// the other half destroyed; squeeze; instantiate all 16 again; a replay of each correct.
//
//   nvcc -std=c++20 -arch=sm_90 -Iinclude -o executable_cache_squeeze executable_cache_squeeze.cu
#include <graphcap/cuda/detail/executable_cache.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <vector>

__global__ void add_one(int* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    p[0] += 1;
  }
}

namespace {

long long start_free = 0;

double held_mib() {
  return static_cast<double>(start_free -
                             static_cast<long long>(graphcap::detail::device_free_bytes())) /
         (1024.0 * 1024.0);
}

void line(const char* what, double ms = -1.0) {
  if (ms >= 0) {
    std::printf("  %-52s held %9.2f MiB  (%.2f ms)\n", what, held_mib(), ms);
  } else {
    std::printf("  %-52s held %9.2f MiB\n", what, held_mib());
  }
}

double squeeze(const char* what) {
  const auto begin = std::chrono::steady_clock::now();
  const std::size_t gained = graphcap::detail::squeeze_executable_cache();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  line(what, ms);
  std::printf("    squeeze_executable_cache() returned %.2f MiB; last error %s\n",
              static_cast<double>(gained) / (1024.0 * 1024.0),
              cudaGetErrorName(cudaPeekAtLastError()));
  return ms;
}

} // namespace

int main() {
  constexpr int graphs = 16;
  constexpr int nodes = 4000;
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  int* counter = nullptr;
  cudaMalloc(&counter, sizeof(int) * graphs);
  cudaMemset(counter, 0, sizeof(int) * graphs);
  cudaDeviceSynchronize();
  start_free = static_cast<long long>(graphcap::detail::device_free_bytes());
  std::vector<cudaGraph_t> templates(graphs);
  std::vector<cudaGraphExec_t> execs(graphs);
  for (int g = 0; g < graphs; ++g) {
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < nodes; ++i) {
      add_one<<<1, 32, 0, stream>>>(counter + g);
    }
    cudaStreamEndCapture(stream, &templates[g]);
  }
  line("16 templates of 4,000 kernel nodes captured");
  for (int g = 0; g < graphs; ++g) {
    cudaGraphInstantiate(&execs[g], templates[g], 0);
  }
  line("16 executables instantiated");
  for (int g = 0; g < graphs; g += 2) {
    cudaGraphExecDestroy(execs[g]);
  }
  line("8 of them destroyed (every other one)");
  squeeze("squeezed, 8 alive");
  for (int g = 1; g < graphs; g += 2) {
    cudaGraphExecDestroy(execs[g]);
  }
  line("the other 8 destroyed");
  squeeze("squeezed, none alive");
  squeeze("squeezed again");
  const auto begin = std::chrono::steady_clock::now();
  for (int g = 0; g < graphs; ++g) {
    cudaGraphInstantiate(&execs[g], templates[g], 0);
  }
  line("16 instantiated again",
       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
  for (int g = 0; g < graphs; ++g) {
    cudaGraphLaunch(execs[g], stream);
  }
  cudaStreamSynchronize(stream);
  std::vector<int> host(graphs);
  cudaMemcpy(host.data(), counter, sizeof(int) * graphs, cudaMemcpyDeviceToHost);
  int right = 0;
  for (int g = 0; g < graphs; ++g) {
    right += host[g] == nodes ? 1 : 0;
  }
  std::printf("  replays right: %d of %d; last error %s\n", right, graphs,
              cudaGetErrorName(cudaGetLastError()));
  for (int g = 0; g < graphs; ++g) {
    cudaGraphExecDestroy(execs[g]);
    cudaGraphDestroy(templates[g]);
  }
  cudaFree(counter);
  cudaStreamDestroy(stream);
  return right == graphs ? 0 : 1;
}
