// test/pool/hold_kernels.cuh - a kernel that holds its stream (and the graph it is captured in)
// until the host releases it, for tests of what must wait for a running replay. Built by nvcc;
// the tests are C++ files (kernels.cuh says why).
#pragma once

#include <cuda_runtime_api.h>

namespace gctest {

/// What a hold kernel reads and reports, in host-mapped pinned memory (host and device see it).
struct hold_state {
  int released;  // set by the host: the kernel returns
  int started;   // set by the kernel when it begins (each launch)
  int timed_out; // set by the kernel when it gave up waiting
};

/// One thread that spins until state->released is non-zero; after `timeout_ms` it gives up and
/// sets state->timed_out, so that a hold nobody releases becomes a failure, not a hang.
/// `state` is the device pointer of mapped memory. Capturable.
void launch_wait_for_release(cudaStream_t stream, hold_state* state, unsigned int timeout_ms);

} // namespace gctest
