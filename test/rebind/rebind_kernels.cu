#include "rebind_kernels.cuh"

#ifdef GCTEST_ON_DOUBLE
#include <cuda_double/kernels.hpp>
#endif

__global__ void rebind_axpy(float* y, const float* x, float factor, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    y[i] += factor * x[i];
  }
}

__global__ void rebind_bump(gctest::rebind_view view) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < view.count) {
    view.data[i] += 1.0F;
  }
}

__global__ void rebind_scale_by(float* y, const float* factor, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    y[i] *= *factor;
  }
}

__global__ void rebind_tag(std::uint64_t* out, std::uint64_t tag) {
  *out = tag;
}

namespace gctest {
namespace {

constexpr unsigned threads = 128;

unsigned blocks_for(unsigned count) {
  return (count + threads - 1) / threads;
}

} // namespace

void launch_axpy(cudaStream_t stream, float* y, const float* x, float factor, unsigned count) {
  rebind_axpy<<<blocks_for(count), threads, 0, stream>>>(y, x, factor, count);
}

void launch_bump(cudaStream_t stream, rebind_view view) {
  rebind_bump<<<blocks_for(view.count), threads, 0, stream>>>(view);
}

void launch_scale_by(cudaStream_t stream, float* y, const float* factor, unsigned count) {
  rebind_scale_by<<<blocks_for(count), threads, 0, stream>>>(y, factor, count);
}

void launch_tag(cudaStream_t stream, std::uint64_t* out, std::uint64_t tag) {
  rebind_tag<<<1, 1, 0, stream>>>(out, tag);
}

void model_rebind_kernels() {
#ifdef GCTEST_ON_DOUBLE
  cuda_double::emulate_kernel(&rebind_axpy,
                              [](float* y, const float* x, float factor, unsigned count) {
                                for (unsigned i = 0; i < count; ++i) {
                                  y[i] += factor * x[i];
                                }
                              });
  cuda_double::emulate_kernel(&rebind_bump, [](rebind_view view) {
    for (unsigned i = 0; i < view.count; ++i) {
      view.data[i] += 1.0F;
    }
  });
  cuda_double::emulate_kernel(&rebind_scale_by, [](float* y, const float* factor, unsigned count) {
    for (unsigned i = 0; i < count; ++i) {
      y[i] *= *factor;
    }
  });
  cuda_double::emulate_kernel(&rebind_tag,
                              [](std::uint64_t* out, std::uint64_t tag) { *out = tag; });
#endif
}

} // namespace gctest
