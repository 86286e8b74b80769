// test/gpu/control_flow_kernels.cuh - kernels that decide conditional nodes on the device, behind
// host launchers (the tests are C++ files: see kernels.cuh).
#pragma once

#include <graphcap/control_flow.hpp>

#include <cuda_runtime_api.h>

namespace gctest {

/// One thread: --*counter; sets `flag` to whether it is still above zero (a WHILE loop's step).
void launch_count_down(cudaStream_t stream, int* counter, graphcap::condition flag);
/// One thread: ++*iterations.
void launch_count_iteration(cudaStream_t stream, int* iterations);
/// One thread: sets `flag` to `*value` (a decision computed from device data).
void launch_set_from(cudaStream_t stream, const int* value, graphcap::condition flag);

} // namespace gctest
