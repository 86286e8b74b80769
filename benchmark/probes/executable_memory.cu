// Probe (kept, issue #46): where an executable graph's device memory comes from and what gives it
// back. Captures one graph of N tiny kernel nodes, then reads cudaMemGetInfo's free figure after
// each step: instantiate, upload, the first launch, destroying the executables, a device
// synchronize, cudaDeviceGraphMemTrim, trimming the default memory pool, and instantiating again.
// The same for a graph of memset nodes. A second part asks whether a context's graph-memory cache
// can be given back at all: after the destruction, a cudaMalloc of the free figure + X MiB for a
// few X (what the driver can still hand out beyond what cudaMemGetInfo reports).
//
//   nvcc -std=c++20 -arch=sm_90 -o executable_memory executable_memory.cu
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <vector>

__global__ void tiny(int* p) {
  if (p != nullptr && threadIdx.x == 0) {
    *p += 1;
  }
}

static long long free_bytes() {
  std::size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return static_cast<long long>(free);
}

static void say(const char* step, long long before, long long now, int executables, int nodes) {
  const double used = static_cast<double>(before - now);
  std::printf("  %-44s %+10.2f MiB  (%.2f KiB per node)\n", step, -used / (1024.0 * 1024.0),
              used / 1024.0 / (static_cast<double>(executables) * nodes));
}

static cudaGraph_t capture(cudaStream_t stream, int nodes, bool memsets, int* target) {
  cudaGraph_t graph = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < nodes; ++i) {
    if (memsets) {
      cudaMemsetAsync(target, 0, sizeof(int), stream);
    } else {
      tiny<<<1, 32, 0, stream>>>(target);
    }
  }
  cudaStreamEndCapture(stream, &graph);
  return graph;
}

static void run(const char* kind, bool memsets, int nodes, int executables, cudaStream_t stream,
                int* target) {
  std::printf("%s: %d executables of %d nodes\n", kind, executables, nodes);
  cudaGraph_t graph = capture(stream, nodes, memsets, target);
  const long long start = free_bytes();
  std::vector<cudaGraphExec_t> execs(executables);
  for (auto& exec : execs) {
    cudaGraphInstantiate(&exec, graph, 0);
  }
  say("instantiated", start, free_bytes(), executables, nodes);
  for (auto exec : execs) {
    cudaGraphUpload(exec, stream);
  }
  cudaStreamSynchronize(stream);
  say("uploaded", start, free_bytes(), executables, nodes);
  for (auto exec : execs) {
    cudaGraphLaunch(exec, stream);
  }
  cudaStreamSynchronize(stream);
  say("launched once each", start, free_bytes(), executables, nodes);
  for (auto exec : execs) {
    cudaGraphExecDestroy(exec);
  }
  say("executables destroyed", start, free_bytes(), executables, nodes);
  cudaDeviceSynchronize();
  say("+ cudaDeviceSynchronize", start, free_bytes(), executables, nodes);
  cudaDeviceGraphMemTrim(0);
  say("+ cudaDeviceGraphMemTrim", start, free_bytes(), executables, nodes);
  cudaMemPool_t pool = nullptr;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  cudaMemPoolTrimTo(pool, 0);
  say("+ default pool trimmed", start, free_bytes(), executables, nodes);
  for (auto& exec : execs) {
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphUpload(exec, stream);
  }
  cudaStreamSynchronize(stream);
  say("instantiated + uploaded again", start, free_bytes(), executables, nodes);
  for (auto exec : execs) {
    cudaGraphExecDestroy(exec);
  }
  cudaGraphDestroy(graph);
  cudaDeviceSynchronize();
  say("destroyed again", start, free_bytes(), executables, nodes);
}

int main() {
  cudaStream_t stream = nullptr;
  int* target = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&target, sizeof(int)) != cudaSuccess) {
    std::printf("no device\n");
    return 1;
  }
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("driver %d, free at start %.1f MiB\n", driver, free_bytes() / 1048576.0);
  run("kernel nodes", false, 1, 8, stream, target);
  run("kernel nodes", false, 1000, 8, stream, target);
  run("kernel nodes", false, 10000, 8, stream, target);
  run("memset nodes", true, 10000, 8, stream, target);

  // What the driver can hand out beyond what cudaMemGetInfo reports, after the destructions.
  for (long long extra_mib : {0LL, 128LL, 256LL, 512LL, 1024LL}) {
    const long long free = free_bytes();
    void* block = nullptr;
    const cudaError_t status =
        cudaMalloc(&block, static_cast<std::size_t>(free + extra_mib * 1048576LL));
    static_cast<void>(cudaGetLastError());
    std::printf("cudaMalloc(free + %lld MiB): %s\n", extra_mib, cudaGetErrorName(status));
    if (status == cudaSuccess) {
      cudaFree(block);
    }
  }
  std::printf("free at end %.1f MiB\n", free_bytes() / 1048576.0);
  cudaFree(target);
  cudaStreamDestroy(stream);
  return 0;
}
