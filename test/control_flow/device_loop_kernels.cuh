// test/control_flow/device_loop_kernels.cuh - captures of graphcap::device_loop loops
// (<graphcap/device_loop.cuh> needs nvcc), behind functions the C++ tests call (see kernels.cuh).
#pragma once

#include <graphcap/graphcap.hpp>

#include <cuda_runtime_api.h>

namespace gctest {

/// Captures device_loop(cap, n, ...) of one kernel that increments *iterations.
void capture_repeat(graphcap::graph& graph, cudaStream_t stream, unsigned n, int* iterations);
/// Captures device_loop(cap, trips, ...) of the same kernel: *trips read at each replay.
void capture_repeat_from_device(graphcap::graph& graph, cudaStream_t stream, const unsigned* trips,
                                int* iterations);
/// Captures `outer` iterations of a body that increments *outer_count and repeats an inner loop
/// of `inner` iterations incrementing *inner_count.
void capture_nested_repeat(graphcap::graph& graph, cudaStream_t stream, unsigned outer,
                           unsigned inner, int* outer_count, int* inner_count);
/// Captures device_loop(cap, n, counter, ...) on a graph without a pool; the body also records the
/// iterations left, as the body sees them, into left[*iterations] before incrementing.
void capture_repeat_with_counter(graphcap::lean_graph& graph, cudaStream_t stream, unsigned n,
                                 unsigned* counter, int* iterations, unsigned* left);

} // namespace gctest
