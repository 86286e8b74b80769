// graphcap/detail/allocation_size.hpp - `count * sizeof(T)`, refused when it overflows.
#pragma once

#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>

namespace graphcap::detail {

/// The bytes `count` objects of T take; out_of_memory_error if that does not fit in size_t
/// (a negative count converted to size_t, most often).
template <class T>
[[nodiscard]] std::size_t allocation_bytes(std::size_t count) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) [[unlikely]] {
    throw_error<out_of_memory_error>(cudaErrorMemoryAllocation, "graphcap::scope::allocate",
                                     "the requested element count overflows size_t (count * "
                                     "sizeof(T)); was a negative count converted to size_t?");
  }
  return count * sizeof(T);
}

} // namespace graphcap::detail
