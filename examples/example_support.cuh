// examples/example_support.cuh - what every example needs besides graphcap: a device check and
// a CUDA error check for the example's own calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace example {

/// True when a CUDA device is usable; otherwise says so, so the example can stop cleanly.
inline bool device_present(const char* name) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("%s: no CUDA device present (%s); built, not run.\n", name,
                status == cudaSuccess ? "0 devices" : cudaGetErrorName(status));
    static_cast<void>(cudaGetLastError());
    return false;
  }
  return true;
}

/// Aborts the example with the CUDA error's name if `status` is not cudaSuccess.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorName(status));
    std::exit(EXIT_FAILURE);
  }
}

} // namespace example
