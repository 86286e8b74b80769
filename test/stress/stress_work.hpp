// test/stress/stress_work.hpp - the work the stress tests capture, behind plain host functions.
//
// On the GPU (stress_work.cu) it is a kernel; on the CUDA test double (stress_work_double.cpp),
// which runs no kernels, a host function doing the same on the double's host-backed memory.
// Catch2 never meets nvcc (test/support/kernels.cuh says why).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gcstress {

/// data[i] += value for i < count, on `stream` (capturable).
void launch_add(cudaStream_t stream, int* data, int value, std::size_t count);

/// Drops what launch_add keeps alive for its captured work (the double's host-function
/// arguments). Call only when no graph that captured launch_add is left.
void release_work();

} // namespace gcstress
