// test/rebind/rebind_kernels.cuh - kernels whose parameters hold the inputs a rebinder moves,
// behind plain host launchers (Catch2 never meets nvcc: see test/support/kernels.cuh). On the
// test double, model_rebind_kernels() gives each kernel its host model.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gctest {

/// A struct parameter with a pointer inside, at byte 8 (after the count and its padding).
struct rebind_view {
  unsigned count;
  float* data;
};

/// y[i] += factor * x[i], for i < count (kernel rebind_axpy: y at offset 0, x at offset 8).
void launch_axpy(cudaStream_t stream, float* y, const float* x, float factor, unsigned count);
/// view.data[i] += 1, for i < view.count (kernel rebind_bump: the pointer at offset 8).
void launch_bump(cudaStream_t stream, rebind_view view);
/// *out = tag (kernel rebind_tag): `tag` is an integer that may equal some allocation's address.
void launch_tag(cudaStream_t stream, std::uint64_t* out, std::uint64_t tag);

/// y[i] *= *factor, for i < count (kernel rebind_scale_by: the factor read from device memory).
void launch_scale_by(cudaStream_t stream, float* y, const float* factor, unsigned count);

/// On the test double: the kernels' host models (nothing on a GPU).
void model_rebind_kernels();

} // namespace gctest
