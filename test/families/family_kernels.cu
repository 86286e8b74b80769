#include "family_kernels.cuh"

#ifdef GCTEST_ON_DOUBLE
#include <cuda_double/kernels.hpp>
#endif

__global__ void family_cluster_report(int* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned ranks = 0;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));
    *out = static_cast<int>(ranks);
#else
    *out = -1; // no clusters before sm_90
#endif
  }
}

__global__ void family_other_report(int* out) {
  *out = 2;
}

__global__ void family_fill(int* out, int count, int value) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < count) {
    out[i] = value;
  }
}

namespace gctest {

void launch_fill(cudaStream_t stream, int* out, int count, int value) {
  family_fill<<<(count + 63) / 64, 64, 0, stream>>>(out, count, value);
}

cudaError_t launch_cluster_report(cudaStream_t stream, int* out, unsigned cluster) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(2);
  config.blockDim = dim3(32);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, family_cluster_report, out);
}

void launch_other_report(cudaStream_t stream, int* out) {
  family_other_report<<<2, 32, 0, stream>>>(out);
}

void model_family_kernels() {
#ifdef GCTEST_ON_DOUBLE
  cuda_double::emulate_kernel(&family_cluster_report, [](int* out) {
    const unsigned x =
        cuda_double::launch_attribute(cudaLaunchAttributeClusterDimension).clusterDim.x;
    *out = x == 0 ? 1 : static_cast<int>(x); // no attribute: clusters of one block
  });
  cuda_double::emulate_kernel(&family_other_report, [](int* out) { *out = 2; });
  cuda_double::emulate_kernel(&family_fill, [](int* out, int count, int value) {
    for (int i = 0; i < count; ++i) {
      out[i] = value;
    }
  });
#endif
}

} // namespace gctest
