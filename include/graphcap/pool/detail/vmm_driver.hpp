// graphcap/pool/detail/vmm_driver.hpp - what pool::sleepable's chunks (pool/detail/vmm_chunks.hpp)
// call: the CUDA driver's virtual memory functions, each resolved at its first use through the
// lazy driver layer (cuda/detail/driver.hpp), what backs one segment of a pool's address range
// and gives it back, and pinned host memory for a backup.
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

/// Throws for a call of a wake that failed: out_of_memory_error where the driver had no memory,
/// else cuda_error; the pool stays asleep.
inline void vmm_check_wake(CUresult status, const char* call) {
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

/// A sleeping pool's contents in pinned host memory, range by range (the blocks in use), and the
/// stream of its copies.
class host_backup {
public:
  host_backup() noexcept = default;
  host_backup(const host_backup&) = delete;
  host_backup& operator=(const host_backup&) = delete;
  host_backup(host_backup&&) = delete;
  host_backup& operator=(host_backup&&) = delete;
  ~host_backup() { reset(); }

  /// Copies each of `slabs` (ranges of them, none across two) to pinned host memory, contiguous
  /// ranges in one copy, and waits for the copies; the memory kept from an earlier backup if it
  /// is large enough, else new (cudaMallocHost). On failure there is no backup, and it throws.
  void save(const device_ranges& slabs) {
    const relaxed_capture_mode_guard relaxed; // another thread may capture (global mode)
    std::size_t bytes = 0;
    for (const auto& [base, size] : slabs) {
      bytes += size;
    }
    if (capacity_ < bytes) {
      reset();
      void* memory = nullptr;
      check(cudaMallocHost(&memory, bytes), "cudaMallocHost");
      data_ = static_cast<std::byte*>(memory);
      capacity_ = bytes;
    }
    try {
      std::size_t offset = 0;
      for (const auto& [base, size] : slabs) {
        entries_.emplace(base, std::pair{offset, size});
        offset += size;
      }
      bytes_ = bytes;
      for_each_run([&](CUdeviceptr from, std::size_t to, std::size_t size) {
        check(
            cudaMemcpyAsync(data_ + to, vmm_pointer(from), size, cudaMemcpyDeviceToHost, stream()),
            "cudaMemcpyAsync");
      });
      check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    } catch (...) {
      clear(); // a retry finds the memory
      throw;
    }
  }
  /// Copies the backup back to the slabs it still has, and waits for the copies.
  void restore() {
    const relaxed_capture_mode_guard relaxed;
    for_each_run([&](CUdeviceptr to, std::size_t from, std::size_t size) {
      check(cudaMemcpyAsync(vmm_pointer(to), data_ + from, size, cudaMemcpyHostToDevice, stream()),
            "cudaMemcpyAsync");
    });
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }
  /// A slab the pool freed (`bytes` at `slab`): nothing is restored there.
  void forget(CUdeviceptr slab, std::size_t bytes) noexcept {
    entries_.erase(entries_.lower_bound(slab), entries_.lower_bound(slab + bytes));
  }
  /// No backup any more; the memory is kept for the next one.
  void clear() noexcept {
    bytes_ = 0;
    entries_.clear();
  }
  /// No backup, and the memory freed.
  void reset() noexcept {
    if (data_ != nullptr) {
      ignore(cudaFreeHost(data_));
    }
    data_ = nullptr;
    capacity_ = 0;
    clear();
  }
  /// The backup (null when there is none).
  [[nodiscard]] std::byte* data() const noexcept { return bytes_ > 0 ? data_ : nullptr; }
  /// The backup's size (0: none).
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// The pinned host memory held, backup or not.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// The stream the copies run on (never capturing), made at the first use.
  [[nodiscard]] cudaStream_t stream() {
    if (!stream_) {
      cudaStream_t stream = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      stream_.reset(stream);
    }
    return stream_.get();
  }

private:
  /// Calls f(device address, host offset, bytes) for each run of contiguous slabs.
  template <class F>
  void for_each_run(F&& f) const {
    CUdeviceptr start = 0;
    std::size_t offset = 0;
    std::size_t bytes = 0;
    for (const auto& [base, entry] : entries_) {
      if (bytes > 0 && base == start + bytes && entry.first == offset + bytes) {
        bytes += entry.second; // contiguous on the device and in the backup: one copy
        continue;
      }
      if (bytes > 0) {
        f(start, offset, bytes);
      }
      start = base;
      offset = entry.first;
      bytes = entry.second;
    }
    if (bytes > 0) {
      f(start, offset, bytes);
    }
  }

  std::map<CUdeviceptr, std::pair<std::size_t, std::size_t>> entries_; // range -> offset, bytes
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0; // pinned bytes held
  std::size_t bytes_ = 0;    // the backup's (0: none)
  stream_handle stream_;
};

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
inline CUresult vmm_back(CUdeviceptr base, vmm_segment& segment, int device, const char*& failed) {
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
inline CUresult vmm_unback(CUdeviceptr base, vmm_segment& segment, const char*& failed) noexcept {
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
