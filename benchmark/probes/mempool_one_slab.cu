// Probe (test/pool/pool_handover.gpu.cpp, the pool::user case): a cudaMemPool_t whose maxSize is
// one 2 MiB slab. Does it serve a 2 MiB allocation at all; and when that memory was freed with
// cudaFreeAsync on stream A behind an event that a kernel held on the device has not recorded
// yet, does cudaMallocFromPoolAsync on stream B hand out the same memory with B made to wait for
// A (cudaMemPoolReuseAllowInternalDependencies), or fail with cudaErrorMemoryAllocation? The same
// with maxSize 0 (the default) for comparison.
//
//   nvcc -std=c++20 -arch=sm_90 -o mempool_one_slab mempool_one_slab.cu && ./mempool_one_slab
#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
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

namespace {

constexpr std::size_t slab = std::size_t{2} << 20;

const char* query(cudaStream_t stream) {
  const cudaError_t status = cudaStreamQuery(stream);
  static_cast<void>(cudaGetLastError());
  return status == cudaSuccess ? "idle" : status == cudaErrorNotReady ? "waiting" : "error";
}

void run(std::size_t max_size) {
  std::printf("== maxSize %zu\n", max_size);
  cudaMemPoolProps properties{};
  properties.allocType = cudaMemAllocationTypePinned;
  properties.location.type = cudaMemLocationTypeDevice;
  properties.location.id = 0;
  properties.maxSize = max_size;
  cudaMemPool_t pool = nullptr;
  SAY(cudaMemPoolCreate(&pool, &properties));
  unsigned long long keep = ~0ULL;
  SAY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  int* flags = nullptr; // [0] released, [1] started
  SAY(cudaHostAlloc(reinterpret_cast<void**>(&flags), 2 * sizeof(int), cudaHostAllocMapped));
  flags[0] = 0;
  flags[1] = 0;
  int* device_flags = nullptr;
  SAY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags), flags, 0));
  cudaStream_t held = nullptr;
  cudaStream_t a = nullptr;
  cudaStream_t b = nullptr;
  SAY(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking));
  SAY(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  SAY(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t done = nullptr;
  SAY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

  void* first = nullptr;
  SAY(cudaMallocFromPoolAsync(&first, slab, pool, a));
  SAY(cudaStreamSynchronize(a));
  std::printf("  first allocation at %p\n", first);
  wait_for_host<<<1, 1, 0, held>>>(device_flags, device_flags + 1);
  SAY(cudaEventRecord(done, held));
  while (flags[1] == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  SAY(cudaStreamWaitEvent(a, done, 0));
  SAY(cudaFreeAsync(first, a)); // runs once the held kernel is released
  void* second = nullptr;
  SAY(cudaMallocFromPoolAsync(&second, slab, pool, b));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::printf("  second allocation at %p (%s the first); stream B %s, stream A %s while held\n",
              second, second == first ? "same as" : "not", query(b), query(a));
  flags[0] = 1;
  SAY(cudaStreamSynchronize(b));
  SAY(cudaDeviceSynchronize());
  if (second != nullptr) {
    SAY(cudaFreeAsync(second, b));
    SAY(cudaStreamSynchronize(b));
  }
  SAY(cudaEventDestroy(done));
  SAY(cudaStreamDestroy(held));
  SAY(cudaStreamDestroy(a));
  SAY(cudaStreamDestroy(b));
  SAY(cudaFreeHost(flags));
  SAY(cudaMemPoolDestroy(pool));
}

} // namespace

int main() {
  run(slab);
  run(0);
  return 0;
}
