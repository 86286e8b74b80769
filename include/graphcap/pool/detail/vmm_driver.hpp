// graphcap/pool/detail/vmm_driver.hpp - what pool::sleepable's chunks (pool/detail/vmm_chunks.hpp)
// call: the CUDA driver's virtual memory functions, each resolved at its first use through the
// lazy driver layer (cuda/detail/driver.hpp), what backs one segment of a pool's address range
// and gives it back, and the replays a sleep waits for.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

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
template <class = void>
void* vmm_pointer(CUdeviceptr address) noexcept {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the driver hands out addresses as integers
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

/// Throws cuda_error (Error) for a failed driver call, with `hint` (or the status's usual one).
template <class Error = cuda_error>
void vmm_check(CUresult status, const char* call, std::string_view hint = {}) {
  if (status != CUDA_SUCCESS) [[unlikely]] {
    throw_error<Error>(static_cast<cudaError_t>(status), call, hint);
  }
}

/// Throws for a call of a wake that failed: out_of_memory_error where the driver had no memory,
/// else cuda_error; the pool stays asleep.
template <class = void>
void vmm_check_wake(CUresult status, const char* call) {
  if (status == CUDA_ERROR_OUT_OF_MEMORY) {
    vmm_check<out_of_memory_error>(status, call,
                                   "a sleepable pool's wake could not get its memory back: it "
                                   "stays asleep and keeps its backup; free memory and call "
                                   "wake() again");
  }
  vmm_check(status, call,
            "the sleepable pool stays asleep and keeps its backup: call wake() again");
}

/// Ranges of device memory: address and bytes, ascending.
using device_ranges = std::vector<std::pair<CUdeviceptr, std::size_t>>;

/// One physical allocation mapped at one address range of a sleepable pool.
struct vmm_segment {
  std::size_t bytes = 0;                     ///< its size (a multiple of the granularity)
  CUmemGenericAllocationHandle physical = 0; ///< valid while has_physical
  bool has_physical = false; ///< created and not released yet (released once mapped)
  bool mapped = false;       ///< mapped at its address
};

/// Creates (where it has none), maps and opens for `device` the physical memory of the segment
/// at `base`, then releases its handle (the mapping holds the memory); the status of the call
/// that failed (`failed` names it), leaving what it did for vmm_unback to undo. A missing driver
/// function throws cuda_error naming it.
template <class = void>
CUresult vmm_back(CUdeviceptr base, vmm_segment& segment, int device, const char*& failed) {
  const vmm_driver& driver = vmm();
  if (!segment.has_physical) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    failed = "cuMemCreate";
    if (const CUresult status =
            driver.create.require(sleepable_needs)(&segment.physical, segment.bytes, &prop, 0);
        status != CUDA_SUCCESS) {
      return status;
    }
    segment.has_physical = true;
  }
  failed = "cuMemMap";
  if (const CUresult status =
          driver.map.require(sleepable_needs)(base, segment.bytes, 0, segment.physical, 0);
      status != CUDA_SUCCESS) {
    return status;
  }
  segment.mapped = true;
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = device;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  failed = "cuMemSetAccess";
  if (const CUresult status =
          driver.set_access.require(sleepable_needs)(base, segment.bytes, &desc, 1);
      status != CUDA_SUCCESS) {
    return status;
  }
  // Released at once: the mapping keeps the memory, and the unmap alone frees it, so a sleep
  // makes one cuMemUnmap per run of mapped segments and no cuMemRelease. Should the release
  // fail (or the driver lack it), the handle stays, and vmm_unback releases it.
  if (const auto release = driver.release.find();
      release != nullptr && release(segment.physical) == CUDA_SUCCESS) {
    segment.has_physical = false;
  }
  return CUDA_SUCCESS;
}

/// Unmaps and releases what the segment at `base` holds; the status of the call that failed
/// (`failed` names it), or CUDA_SUCCESS. Never throws (a missing function: CUDA_ERROR_NOT_FOUND).
template <class = void>
CUresult vmm_unback(CUdeviceptr base, vmm_segment& segment, const char*& failed) noexcept {
  const vmm_driver& driver = vmm();
  if (segment.mapped) {
    const auto unmap = driver.unmap.find();
    failed = "cuMemUnmap";
    if (const CUresult status =
            unmap != nullptr ? unmap(base, segment.bytes) : CUDA_ERROR_NOT_FOUND;
        status != CUDA_SUCCESS) {
      return status;
    }
    segment.mapped = false;
  }
  if (segment.has_physical) {
    const auto release = driver.release.find();
    failed = "cuMemRelease";
    if (const CUresult status =
            release != nullptr ? release(segment.physical) : CUDA_ERROR_NOT_FOUND;
        status != CUDA_SUCCESS) {
      return status;
    }
    segment.has_physical = false;
  }
  return CUDA_SUCCESS;
}

} // namespace graphcap::detail::pool
