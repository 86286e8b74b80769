// Probe (kept, issue #46 item 4): what, if anything, gives an executable graph's device memory
// back to cudaMemGetInfo once the executables are destroyed, and what waking a family of kept
// templates costs against capturing it again.
//
// Part 1 (wake cost): 64 graphs of 200 kernel nodes (a family's keys): capture them, instantiate
// them, destroy the executables, instantiate again (what a family's wake does), upload, launch
// each once; the times of each step and wake / (capture + instantiate).
// Part 2 (release): 32 executables of 10,000 kernel nodes, then after each step the free figure of
// cudaMemGetInfo against the start: destroy, cudaDeviceSynchronize, cudaDeviceGraphMemTrim,
// cudaMemPoolTrimTo(0) on the default, the current and a created pool, destroying the template,
// cudaCtxResetPersistingL2Cache, cudaDeviceSetLimit of each limit (stack, printf FIFO, malloc
// heap, pending launches, persisting L2), a cudaMalloc of the free figure + X (how much of the
// cache the driver hands out under pressure) and what free says after it is freed,
// instantiating again, and last cudaDeviceReset.
//
//   nvcc -std=c++20 -arch=sm_90 -o executable_memory_release executable_memory_release.cu
#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <vector>

__global__ void tiny(int* p, int step) {
  if (p != nullptr && threadIdx.x == 0 && blockIdx.x == 0) {
    p[0] += step;
  }
}

static long long free_bytes() {
  std::size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return static_cast<long long>(free);
}

static double mib(long long bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

static long long start_free = 0;

static void step(const char* what, cudaError_t status) {
  std::printf("  %-58s %-26s held %9.2f MiB\n", what, cudaGetErrorName(status),
              mib(start_free - free_bytes()));
  cudaGetLastError();
}

static cudaGraph_t capture(cudaStream_t stream, int nodes, int grid, int* target) {
  cudaGraph_t graph = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < nodes; ++i) {
    tiny<<<grid, 32, 0, stream>>>(target, 1);
  }
  cudaStreamEndCapture(stream, &graph);
  return graph;
}

using clock_type = std::chrono::steady_clock;
static double ms_since(clock_type::time_point begin) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - begin).count();
}

static void wake_cost(cudaStream_t stream, int* target) {
  constexpr int keys = 64;
  constexpr int nodes = 200;
  std::printf("part 1: %d graphs of %d kernel nodes\n", keys, nodes);
  for (int round = 0; round < 3; ++round) {
    std::vector<cudaGraph_t> graphs(keys);
    std::vector<cudaGraphExec_t> execs(keys);
    auto begin = clock_type::now();
    for (int k = 0; k < keys; ++k) {
      graphs[k] = capture(stream, nodes, 1 + k, target);
    }
    const double captured = ms_since(begin);
    begin = clock_type::now();
    for (int k = 0; k < keys; ++k) {
      cudaGraphInstantiate(&execs[k], graphs[k], 0);
    }
    const double instantiated = ms_since(begin);
    for (auto exec : execs) {
      cudaGraphExecDestroy(exec);
    }
    begin = clock_type::now();
    for (int k = 0; k < keys; ++k) {
      cudaGraphInstantiate(&execs[k], graphs[k], 0);
    }
    const double again = ms_since(begin);
    begin = clock_type::now();
    for (auto exec : execs) {
      cudaGraphUpload(exec, stream);
    }
    cudaStreamSynchronize(stream);
    const double uploaded = ms_since(begin);
    begin = clock_type::now();
    for (auto exec : execs) {
      cudaGraphLaunch(exec, stream);
    }
    cudaStreamSynchronize(stream);
    const double launched = ms_since(begin);
    for (auto exec : execs) {
      cudaGraphExecDestroy(exec);
    }
    begin = clock_type::now();
    for (int k = 0; k < keys; ++k) {
      cudaGraphInstantiateWithFlags(&execs[k], graphs[k], 0);
    }
    for (auto exec : execs) {
      cudaGraphLaunch(exec, stream);
    }
    cudaStreamSynchronize(stream);
    const double wake = ms_since(begin);
    std::printf("  round %d: capture %.2f ms, instantiate %.2f ms, instantiate again %.2f ms, "
                "upload %.2f ms, first launches %.2f ms; wake (instantiate + launch each) %.2f ms "
                "= %.3fx of capture + instantiate\n",
                round, captured, instantiated, again, uploaded, launched, wake,
                wake / (captured + instantiated));
    for (int k = 0; k < keys; ++k) {
      cudaGraphExecDestroy(execs[k]);
      cudaGraphDestroy(graphs[k]);
    }
  }
}

static void release(cudaStream_t stream, int* target) {
  constexpr int executables = 32;
  constexpr int nodes = 10000;
  std::printf("part 2: %d executables of %d kernel nodes\n", executables, nodes);
  cudaGraph_t graph = capture(stream, nodes, 1, target);
  start_free = free_bytes();
  std::vector<cudaGraphExec_t> execs(executables);
  cudaError_t status = cudaSuccess;
  for (auto& exec : execs) {
    status = cudaGraphInstantiate(&exec, graph, 0);
  }
  step("instantiated", status);
  for (auto exec : execs) {
    cudaGraphLaunch(exec, stream);
  }
  step("launched once each", cudaStreamSynchronize(stream));
  const long long awake = start_free - free_bytes();
  for (auto exec : execs) {
    status = cudaGraphExecDestroy(exec);
  }
  step("executables destroyed", status);
  step("cudaDeviceSynchronize", cudaDeviceSynchronize());
  step("cudaDeviceGraphMemTrim", cudaDeviceGraphMemTrim(0));
  cudaMemPool_t pool = nullptr;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  step("cudaMemPoolTrimTo(default pool, 0)", cudaMemPoolTrimTo(pool, 0));
  cudaDeviceGetMemPool(&pool, 0);
  step("cudaMemPoolTrimTo(current pool, 0)", cudaMemPoolTrimTo(pool, 0));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t created = nullptr;
  cudaMemPoolCreate(&created, &props);
  step("cudaMemPoolTrimTo(created pool, 0)", cudaMemPoolTrimTo(created, 0));
  cudaMemPoolDestroy(created);
  step("cudaGraphDestroy(template)", cudaGraphDestroy(graph));
  step("cudaCtxResetPersistingL2Cache", cudaCtxResetPersistingL2Cache());
  struct limit_case {
    const char* name;
    cudaLimit limit;
    std::size_t value;
  };
  const limit_case limits[] = {
      {"cudaDeviceSetLimit(stack size, 1 KiB)", cudaLimitStackSize, 1024},
      {"cudaDeviceSetLimit(printf FIFO, 64 KiB)", cudaLimitPrintfFifoSize, 64 * 1024},
      {"cudaDeviceSetLimit(malloc heap, 1 MiB)", cudaLimitMallocHeapSize, 1024 * 1024},
      {"cudaDeviceSetLimit(pending launch count, 32)", cudaLimitDevRuntimePendingLaunchCount, 32},
      {"cudaDeviceSetLimit(persisting L2, 0)", cudaLimitPersistingL2CacheSize, 0},
  };
  for (const limit_case& each : limits) {
    std::size_t before = 0;
    cudaDeviceGetLimit(&before, each.limit);
    char line[128];
    std::snprintf(line, sizeof line, "%s (was %zu)", each.name, before);
    step(line, cudaDeviceSetLimit(each.limit, each.value));
  }
  // Under pressure: the largest cudaMalloc of free + X MiB that succeeds (16 MiB steps).
  long long granted = -1;
  for (long long extra = 0; extra <= awake + (64LL << 20); extra += 16LL << 20) {
    void* block = nullptr;
    const long long ask = free_bytes() + extra;
    if (cudaMalloc(&block, static_cast<std::size_t>(ask)) != cudaSuccess) {
      cudaGetLastError();
      break;
    }
    granted = extra;
    cudaFree(block);
  }
  std::printf("  largest cudaMalloc beyond the free figure: %s%.0f MiB of %.2f MiB the "
              "executables took\n",
              granted < 0 ? "none (not even the free figure), " : "",
              mib(granted < 0 ? 0 : granted), mib(awake));
  step("after those cudaMalloc/cudaFree", cudaSuccess);
  graph = capture(stream, nodes, 1, target);
  for (auto& exec : execs) {
    status = cudaGraphInstantiate(&exec, graph, 0);
  }
  step("instantiated again", status);
  for (auto exec : execs) {
    cudaGraphExecDestroy(exec);
  }
  cudaGraphDestroy(graph);
  step("destroyed again", cudaSuccess);
  const long long before_reset = start_free;
  status = cudaDeviceReset();
  cudaFree(nullptr); // a fresh primary context
  std::printf("  %-58s %-26s held %9.2f MiB (against the first context's start)\n",
              "cudaDeviceReset + a fresh context", cudaGetErrorName(status),
              mib(before_reset - free_bytes()));
}

int main() {
  cudaFree(nullptr);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  int* target = nullptr;
  cudaMalloc(&target, sizeof(int));
  wake_cost(stream, target);
  release(stream, target);
  return 0;
}
