// test/families/family_kernels.cuh - kernels launched with launch attributes (cudaLaunchKernelEx),
// for the one-executable tests: CUDA's update does not compare them, so a family must. Behind
// plain host launchers (Catch2 never meets nvcc: see test/support/kernels.cuh); on the test
// double, model_family_kernels() gives each kernel its host model.
#pragma once

#include <cuda_runtime_api.h>

namespace gctest {

/// Two blocks in clusters of `cluster` blocks (cudaLaunchAttributeClusterDimension, 1 or 2): the
/// first thread writes the blocks per cluster it runs with (%cluster_nctarank) to *out.
cudaError_t launch_cluster_report(cudaStream_t stream, int* out, unsigned cluster);
/// *out = 2, one thread: the same signature as cluster_report's, another function.
void launch_other_report(cudaStream_t stream, int* out);

/// out[i] = value for i < count: (count + 63) / 64 blocks of 64 threads (the patch switch's tests:
/// keys differ in the grid and the arguments).
void launch_fill(cudaStream_t stream, int* out, int count, int value);

/// On the test double: the kernels' host models (nothing on a GPU).
void model_family_kernels();

} // namespace gctest
