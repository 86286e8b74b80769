// test/liveness/liveness_kernels.cuh - kernels whose parameters hold the pointers liveness::check
// must find, behind plain host launchers (Catch2 never meets nvcc: see kernels.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gctest {

/// A struct parameter with a pointer inside, at byte 8 (after the count and its padding).
struct scaled_view {
  int count;
  float* data;
};

/// data[i] *= factor, for i < count: the kernel `liveness_scale_raw` takes the raw pointer as
/// parameter 0 (offset 0), then the factor and the count (which is no pointer).
void launch_scale_raw(cudaStream_t stream, float* data, float factor, std::size_t count);
/// The same through the kernel `liveness_scale_view`, whose parameter 0 is a scaled_view: the
/// pointer is at offset 8 of the parameter block.
void launch_scale_view(cudaStream_t stream, scaled_view view, float factor);
/// data[i] = source[i] for i < count, where `source` is read from device memory (`*table`): an
/// input the graph reaches indirectly, which only input() declares.
void launch_copy_indirect(cudaStream_t stream, float* data, const float* const* table,
                          std::size_t count);

} // namespace gctest
