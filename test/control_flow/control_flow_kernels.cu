// test/control_flow/control_flow_kernels.cu - see control_flow_kernels.cuh.
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

__global__ void probe_before(int* slot) {
  *slot = 0;
}
__global__ void probe_then_first(int* slot) {
  *slot = 1;
}
__global__ void probe_then_second(int* slot) {
  *slot = 2;
}
__global__ void probe_else_first(int* slot) {
  *slot = 3;
}
__global__ void probe_else_second(int* slot) {
  *slot = 4;
}
__global__ void probe_after(int* slot) {
  *slot = 5;
}

} // namespace

void launch_probe(cudaStream_t stream, probe which, int* slot) {
  switch (which) {
  case probe::before:
    probe_before<<<1, 1, 0, stream>>>(slot);
    break;
  case probe::then_first:
    probe_then_first<<<1, 1, 0, stream>>>(slot);
    break;
  case probe::then_second:
    probe_then_second<<<1, 1, 0, stream>>>(slot);
    break;
  case probe::else_first:
    probe_else_first<<<1, 1, 0, stream>>>(slot);
    break;
  case probe::else_second:
    probe_else_second<<<1, 1, 0, stream>>>(slot);
    break;
  case probe::after:
    probe_after<<<1, 1, 0, stream>>>(slot);
    break;
  }
}

const char* probe_name(probe which) {
  switch (which) {
  case probe::before:
    return "probe_before";
  case probe::then_first:
    return "probe_then_first";
  case probe::then_second:
    return "probe_then_second";
  case probe::else_first:
    return "probe_else_first";
  case probe::else_second:
    return "probe_else_second";
  case probe::after:
    return "probe_after";
  }
  return "";
}

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
