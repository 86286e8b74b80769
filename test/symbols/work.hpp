// test/symbols/work.hpp - what both translation units of the symbol check capture: one
// cudaMemsetAsync (host-compilable work: no kernel, so g++ builds both files), checked the same
// way in both.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>

namespace symbols {

/// The user's own check of the captured work, identical in both versions.
inline void user_work(cudaStream_t stream, void* buffer, std::size_t bytes) {
  if (cudaMemsetAsync(buffer, 0, bytes, stream) != cudaSuccess) {
    throw std::runtime_error("cudaMemsetAsync failed");
  }
}

} // namespace symbols
