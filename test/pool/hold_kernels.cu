#include "hold_kernels.cuh"

namespace gctest {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void wait_for_release(hold_state* state, unsigned long long timeout_ns) {
  volatile hold_state* shared = state; // mapped host memory: every read goes to the host's copy
  shared->started = 1;
  __threadfence_system();
  const unsigned long long start = global_ns();
  while (shared->released == 0) {
    if (global_ns() - start > timeout_ns) {
      shared->timed_out = 1;
      __threadfence_system();
      return;
    }
    __nanosleep(10000);
  }
}

} // namespace

void launch_wait_for_release(cudaStream_t stream, hold_state* state, unsigned int timeout_ms) {
  wait_for_release<<<1, 1, 0, stream>>>(state, 1000000ULL * timeout_ms);
}

} // namespace gctest
