// graphcap/pool/detail/vmm_driver.hpp - what pool::sleepable's chunks (pool/detail/vmm_chunks.hpp)
// call: the CUDA driver's virtual memory functions, each resolved at its first use through the
// lazy driver layer (cuda/detail/driver.hpp), and pinned host memory for a backup.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/error.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace graphcap::detail::pool {

/// How pool::sleepable words its need of a driver function.
inline constexpr std::string_view sleepable_needs = "pool::sleepable needs";

/// The VMM driver functions, each resolved at its first use (cuda/detail/driver.hpp).
struct vmm_driver {
  driver_function<PFN_cuMemGetAllocationGranularity_v10020, 10020> granularity{
      "cuMemGetAllocationGranularity"};
  driver_function<PFN_cuMemAddressReserve_v10020, 10020> address_reserve{"cuMemAddressReserve"};
  driver_function<PFN_cuMemAddressFree_v10020, 10020> address_free{"cuMemAddressFree"};
  driver_function<PFN_cuMemCreate_v10020, 10020> create{"cuMemCreate"};
  driver_function<PFN_cuMemRelease_v10020, 10020> release{"cuMemRelease"};
  driver_function<PFN_cuMemMap_v10020, 10020> map{"cuMemMap"};
  driver_function<PFN_cuMemUnmap_v10020, 10020> unmap{"cuMemUnmap"};
  driver_function<PFN_cuMemSetAccess_v10020, 10020> set_access{"cuMemSetAccess"};
};

/// The process's VMM driver functions (constant-initialized, as driver()).
inline const vmm_driver& vmm() noexcept {
  static constinit const vmm_driver table{};
  return table;
}

/// The address a driver call gave, as a pointer.
inline void* vmm_pointer(CUdeviceptr address) noexcept {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the driver hands out addresses as integers
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

/// Throws cuda_error (Error) for a failed driver call, with `hint` (or the status's usual one).
template <class Error = cuda_error>
inline void vmm_check(CUresult status, const char* call, std::string_view hint = {}) {
  if (status != CUDA_SUCCESS) [[unlikely]] {
    throw_error<Error>(static_cast<cudaError_t>(status), call, hint);
  }
}

/// Pinned host memory for a sleeping pool's contents.
class host_backup {
public:
  host_backup() noexcept = default;
  host_backup(const host_backup&) = delete;
  host_backup& operator=(const host_backup&) = delete;
  host_backup(host_backup&&) = delete;
  host_backup& operator=(host_backup&&) = delete;
  ~host_backup() { reset(); }

  /// `bytes` of pinned host memory, replacing nothing (call on an empty backup).
  void allocate(std::size_t bytes) {
    const relaxed_capture_mode_guard relaxed;
    void* memory = nullptr;
    check(cudaMallocHost(&memory, bytes), "cudaMallocHost");
    data_ = static_cast<std::byte*>(memory);
    bytes_ = bytes;
  }
  /// Frees the memory.
  void reset() noexcept {
    if (data_ != nullptr) {
      ignore(cudaFreeHost(data_));
      data_ = nullptr;
      bytes_ = 0;
    }
  }
  /// The memory (null when there is no backup).
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// Its size.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

private:
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

} // namespace graphcap::detail::pool
