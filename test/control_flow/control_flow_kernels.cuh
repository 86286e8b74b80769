// test/control_flow/control_flow_kernels.cuh - kernels that decide conditional nodes on the device,
// behind host launchers (the tests are C++ files: see kernels.cuh).
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

/// The kernels of test/control_flow/annotations_bodies.gpu.cpp's numbering case, one name each, so
/// that CUPTI's records tell them apart: each sets *slot to its own number.
enum class probe { before, then_first, then_second, else_first, else_second, after };
/// One thread: *slot = the probe's number, from the kernel named after `which`.
void launch_probe(cudaStream_t stream, probe which, int* slot);
/// The name (a part of the mangled one) of `which`'s kernel: probe_before, probe_then_first...
const char* probe_name(probe which);

} // namespace gctest
