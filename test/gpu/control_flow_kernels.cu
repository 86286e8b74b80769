// test/gpu/control_flow_kernels.cu - see control_flow_kernels.cuh.
#include "control_flow_kernels.cuh"

namespace gctest {
namespace {

__global__ void count_down(int* counter, graphcap::condition flag) {
  const int left = --*counter;
  flag.set(left > 0 ? 1U : 0U);
}

__global__ void count_iteration(int* iterations) {
  ++*iterations;
}

__global__ void set_from(const int* value, graphcap::condition flag) {
  graphcap::set(flag, static_cast<unsigned>(*value));
}

} // namespace

void launch_count_down(cudaStream_t stream, int* counter, graphcap::condition flag) {
  count_down<<<1, 1, 0, stream>>>(counter, flag);
}

void launch_count_iteration(cudaStream_t stream, int* iterations) {
  count_iteration<<<1, 1, 0, stream>>>(iterations);
}

void launch_set_from(cudaStream_t stream, const int* value, graphcap::condition flag) {
  set_from<<<1, 1, 0, stream>>>(value, flag);
}

} // namespace gctest
