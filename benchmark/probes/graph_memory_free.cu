// Probe (kept, docs/pools.md): what frees a graph memory node's allocation that the graph itself
// does not free, read on the GPU through the device's graph-memory counters: cudaFree after the
// replay, after the executable and the graph are destroyed, and while the replay is still held on
// the device by a kernel that waits for the host. Also a WHILE loop whose body kernel clears its
// condition with cudaGraphSetConditional, for running under compute-sanitizer (tools that reject
// it show it here, with no library involved).
//
//   nvcc -std=c++20 -arch=sm_90 -o graph_memory_free graph_memory_free.cu && ./graph_memory_free
//   compute-sanitizer --tool memcheck --leak-check full ./graph_memory_free [case]
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#define SAY(call)                                                                                  \
  do {                                                                                             \
    cudaError_t s_ = (call);                                                                       \
    std::printf("  %-66s -> %s\n", #call, cudaGetErrorName(s_));                                   \
    static_cast<void>(cudaGetLastError());                                                         \
  } while (0)

__global__ void wait_for_host(volatile int* released, volatile int* started) {
  *started = 1;
  __threadfence_system();
  long long spins = 0;
  while (*released == 0 && ++spins < (1LL << 31)) {
  }
}

__global__ void count_down(int* counter, cudaGraphConditionalHandle more) {
  const int left = --*counter;
  cudaGraphSetConditional(more, left > 0 ? 1U : 0U); // every trip, as graphcap's tests do
}

static unsigned long long used() {
  unsigned long long bytes = 0;
  cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &bytes);
  return bytes;
}

/// A graph that allocates 4096 bytes on `s` and does not free them; `held` puts a wait kernel
/// after the allocation.
static cudaGraphExec_t capture_unfreed(cudaStream_t s, void** block, cudaGraph_t* graph,
                                       int* released, int* started, bool held) {
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  cudaMallocAsync(block, 4096, s);
  cudaMemsetAsync(*block, 1, 4096, s);
  if (held)
    wait_for_host<<<1, 1, 0, s>>>(released, started);
  cudaStreamEndCapture(s, graph);
  cudaGraphExec_t exec = nullptr;
  SAY(cudaGraphInstantiateWithFlags(&exec, *graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  return exec;
}

int main(int argc, char** argv) {
  // One case only (0 to 4), where a tool's report must be told apart per case: all when none.
  const int only = argc > 1 ? std::atoi(argv[1]) : -1;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing probed\n");
    return 1;
  }
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int* flags = nullptr; // [0] released, [1] started: host-mapped
  cudaHostAlloc(reinterpret_cast<void**>(&flags), 2 * sizeof(int), cudaHostAllocMapped);
  int* device_flags = nullptr;
  cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags), flags, 0);

  for (int order = 0; order < 3; ++order) {
    if (only >= 0 && only != order)
      continue;
    const char* names[] = {"cudaFree after the replay, executable and graph alive",
                           "cudaFree after the executable and the graph are destroyed",
                           "cudaFree while the replay is held on the device"};
    std::printf("case %d: %s\n", order, names[order]);
    flags[0] = 0;
    flags[1] = 0;
    void* block = nullptr;
    cudaGraph_t graph = nullptr;
    const bool held = order == 2;
    cudaGraphExec_t exec = capture_unfreed(s, &block, &graph, device_flags, device_flags + 1, held);
    std::printf("  used before launch: %llu\n", used());
    SAY(cudaGraphLaunch(exec, s));
    if (held) {
      while (std::atomic_ref<int>(flags[1]).load() == 0) {
      }
      std::thread releaser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::atomic_ref<int>(flags[0]).store(1);
      });
      const auto start = std::chrono::steady_clock::now();
      SAY(cudaFree(block));
      const auto ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
      std::printf("  cudaFree returned after %.1f ms (the hold lasts 300 ms)\n", ms.count());
      releaser.join();
      SAY(cudaStreamSynchronize(s));
    } else {
      SAY(cudaStreamSynchronize(s));
      std::printf("  used after launch: %llu\n", used());
      if (order == 1) {
        SAY(cudaGraphExecDestroy(exec));
        SAY(cudaGraphDestroy(graph));
        exec = nullptr;
        graph = nullptr;
      }
      SAY(cudaFree(block));
    }
    std::printf("  used after cudaFree: %llu\n", used());
    if (exec)
      SAY(cudaGraphExecDestroy(exec));
    if (graph)
      SAY(cudaGraphDestroy(graph));
    SAY(cudaDeviceGraphMemTrim(0));
    std::printf("  used after destroy and trim: %llu\n", used());
  }

  if (only < 0 || only == 4) {
    std::printf("case 4: an ordinary cudaFree (of a cudaMalloc'd byte) while the replay is held\n");
    flags[0] = 0;
    flags[1] = 0;
    void* block = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = capture_unfreed(s, &block, &graph, device_flags, device_flags + 1, true);
    void* sentinel = nullptr;
    SAY(cudaMalloc(&sentinel, 1));
    SAY(cudaGraphLaunch(exec, s));
    while (std::atomic_ref<int>(flags[1]).load() == 0) {
    }
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::atomic_ref<int>(flags[0]).store(1);
    });
    const auto start = std::chrono::steady_clock::now();
    SAY(cudaFree(sentinel));
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    std::printf("  cudaFree returned after %.1f ms (the hold lasts 300 ms)\n", ms.count());
    releaser.join();
    SAY(cudaFree(block));
    SAY(cudaStreamSynchronize(s));
    SAY(cudaGraphExecDestroy(exec));
    SAY(cudaGraphDestroy(graph));
  }

  if (only >= 0 && only != 3) {
    cudaStreamDestroy(s);
    cudaFreeHost(flags);
    return 0;
  }
  std::printf("case 3: a WHILE loop cleared by cudaGraphSetConditional in its body kernel\n");
  int* counter = nullptr;
  cudaMalloc(&counter, sizeof(int));
  cudaGraph_t graph = nullptr;
  cudaGraphCreate(&graph, 0);
  cudaGraphConditionalHandle more;
  SAY(cudaGraphConditionalHandleCreate(&more, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = more;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t loop;
  SAY(cudaGraphAddNode(&loop, graph, nullptr, nullptr, 0, &params));
  cudaGraph_t body = params.conditional.phGraph_out[0];
  cudaStream_t capture;
  cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking);
  SAY(cudaStreamBeginCaptureToGraph(capture, body, nullptr, nullptr, 0,
                                    cudaStreamCaptureModeGlobal));
  count_down<<<1, 1, 0, capture>>>(counter, more);
  cudaGraph_t captured = nullptr;
  SAY(cudaStreamEndCapture(capture, &captured));
  cudaGraphExec_t exec = nullptr;
  SAY(cudaGraphInstantiate(&exec, graph, 0));
  const int trips = 5;
  cudaMemcpy(counter, &trips, sizeof trips, cudaMemcpyHostToDevice);
  SAY(cudaGraphLaunch(exec, s));
  SAY(cudaStreamSynchronize(s));
  int left = -1;
  cudaMemcpy(&left, counter, sizeof left, cudaMemcpyDeviceToHost);
  std::printf("  counter after the loop: %d (0 expected)\n", left);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(counter);
  cudaStreamDestroy(capture);
  cudaStreamDestroy(s);
  cudaFreeHost(flags);
  return 0;
}
