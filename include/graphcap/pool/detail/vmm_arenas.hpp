// graphcap/pool/detail/vmm_arenas.hpp - the address ranges of pool::sleepable's chunks
// (pool/detail/vmm_chunks.hpp): arenas of reserved virtual addresses whose slabs are handed out
// one after the other, and the carve, the start of one arena mapped in one piece ahead of time.
//
// An arena is a cuMemAddressReserve of the device's memory size (another when it is used up, or
// for a slab larger than that). A carve (sleepable_pool_handle::carve) is an arena whose first
// `carved` bytes one physical allocation maps before any slab is taken from it: slabs inside it
// cost no driver call, and a sleep and a wake handle it as one piece, the first sleep too. A slab
// that does not fit in what is left of the carve starts right after it and grows the pool as
// before (the rest of the carve stays mapped, unused). When its last slab goes, the carve's slabs
// start again from its beginning; the carve itself goes with the pool.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/detail/vmm_driver.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace graphcap::detail::pool {

/// One reserved address range of a sleepable pool.
template <class = void>
struct basic_vmm_arena {
  CUdeviceptr base = 0; ///< 0: freed
  std::size_t bytes = 0;
  std::size_t used = 0;   ///< the next slab is at base + used (or after the carve: next_slab)
  std::size_t slabs = 0;  ///< live slabs in it
  std::size_t carved = 0; ///< bytes from base mapped as one piece ahead of time (0: no carve)

  /// Where the next slab of `bytes` starts (an offset): after the carve where it does not fit
  /// in what is left of it.
  [[nodiscard]] std::size_t next_slab(std::size_t size) const noexcept {
    return used < carved && used + size > carved ? carved : used;
  }
  /// True when `size` bytes at `offset` lie in the carve (already mapped).
  [[nodiscard]] bool in_carve(std::size_t offset, std::size_t size) const noexcept {
    return offset + size <= carved;
  }
};
using vmm_arena = basic_vmm_arena<>;

/// The arenas of one sleepable pool, its device and its allocation granularity.
template <class = void>
class basic_vmm_arenas {
public:
  basic_vmm_arenas() = default;
  basic_vmm_arenas(const basic_vmm_arenas&) = delete;
  basic_vmm_arenas& operator=(const basic_vmm_arenas&) = delete;
  basic_vmm_arenas(basic_vmm_arenas&&) = delete;
  basic_vmm_arenas& operator=(basic_vmm_arenas&&) = delete;
  ~basic_vmm_arenas() {
    for (std::size_t index = 0; index < arenas_.size(); ++index) {
      arenas_[index].slabs = 0;
      arenas_[index].carved = 0;
      free(index);
    }
  }

  /// Reads the device and the granularity at the first use; the failed call's status (`failed`
  /// names it), or CUDA_SUCCESS.
  [[nodiscard]] CUresult prepare(const char*& failed) {
    if (granularity_ != 0) {
      return CUDA_SUCCESS;
    }
    check(cudaGetDevice(&device_), "cudaGetDevice");
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    std::size_t granularity = 0;
    if (const CUresult status = vmm().granularity.require(sleepable_needs)(
            &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        status != CUDA_SUCCESS) {
      failed = "cuMemGetAllocationGranularity";
      return status;
    }
    std::size_t free_bytes = 0;
    std::size_t total = 0;
    check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    granularity_ = granularity;
    arena_bytes_ = round(total); // all it could map
    return CUDA_SUCCESS;
  }
  /// `size` rounded up to the granularity (prepare() first).
  [[nodiscard]] std::size_t round(std::size_t size) const noexcept {
    return (size + granularity_ - 1) / granularity_ * granularity_;
  }
  /// The pool's device (prepare() first).
  [[nodiscard]] int device() const noexcept { return device_; }

  /// The arena for a slab of `bytes` (rounded) and its offset there: the last one where it
  /// fits, else a new one; the status of cuMemAddressReserve where that failed.
  [[nodiscard]] CUresult place(std::size_t bytes, std::size_t& index, std::size_t& offset) {
    if (arenas_.empty() || arenas_.back().base == 0 ||
        arenas_.back().bytes - arenas_.back().next_slab(bytes) < bytes) {
      if (const CUresult status = add(std::max(arena_bytes_, bytes)); status != CUDA_SUCCESS) {
        return status;
      }
    }
    index = arenas_.size() - 1;
    offset = arenas_[index].next_slab(bytes);
    return CUDA_SUCCESS;
  }
  /// A new arena of at least `bytes` whose first `bytes` are to be the carve (carved() once
  /// mapped); the status of cuMemAddressReserve.
  [[nodiscard]] CUresult add_carve(std::size_t bytes) { return add(std::max(arena_bytes_, bytes)); }
  /// The slab at `offset` of arena `index`, `bytes` long, is taken.
  void taken(std::size_t index, std::size_t offset, std::size_t bytes) noexcept {
    arenas_[index].used = offset + bytes;
    ++arenas_[index].slabs;
  }
  /// A slab of arena `index` is gone: the arena goes with its last one, unless it holds the
  /// carve, whose slabs then start again from its beginning.
  void gone(std::size_t index) noexcept {
    --arenas_[index].slabs;
    if (arenas_[index].slabs == 0 && arenas_[index].carved > 0) {
      arenas_[index].used = 0;
    }
    free(index);
  }
  /// Gives back arena `index` if it holds no slab and no carve (errors ignored).
  void free(std::size_t index) noexcept {
    vmm_arena& entry = arenas_[index];
    if (entry.base == 0 || entry.slabs > 0 || entry.carved > 0) {
      return;
    }
    if (const auto address_free = vmm().address_free.find(); address_free != nullptr) {
      static_cast<void>(address_free(entry.base, entry.bytes));
    }
    entry = vmm_arena{};
    while (!arenas_.empty() && arenas_.back().base == 0) {
      arenas_.pop_back();
    }
  }
  /// True where an arena starts (a run of mappings ends before it).
  [[nodiscard]] bool starts(CUdeviceptr address) const noexcept {
    return std::any_of(arenas_.begin(), arenas_.end(),
                       [&](const vmm_arena& entry) { return entry.base == address; });
  }
  [[nodiscard]] vmm_arena& operator[](std::size_t index) noexcept { return arenas_[index]; }
  [[nodiscard]] const vmm_arena& operator[](std::size_t index) const noexcept {
    return arenas_[index];
  }
  [[nodiscard]] std::size_t size() const noexcept { return arenas_.size(); }
  /// The arena holding the carve (size(): none).
  [[nodiscard]] std::size_t carve() const noexcept {
    const auto found = std::find_if(arenas_.begin(), arenas_.end(),
                                    [](const vmm_arena& entry) { return entry.carved > 0; });
    return static_cast<std::size_t>(found - arenas_.begin());
  }

private:
  CUresult add(std::size_t bytes) {
    arenas_.reserve(arenas_.size() + 1); // so that push_back cannot throw once reserved
    vmm_arena fresh;
    fresh.bytes = bytes;
    if (const CUresult status =
            vmm().address_reserve.require(sleepable_needs)(&fresh.base, fresh.bytes, 0, 0, 0);
        status != CUDA_SUCCESS) {
      return status;
    }
    arenas_.push_back(fresh);
    return CUDA_SUCCESS;
  }

  std::vector<vmm_arena> arenas_;
  std::size_t granularity_ = 0;
  std::size_t arena_bytes_ = 0;
  int device_ = 0;
};
using vmm_arenas = basic_vmm_arenas<>;

/// out_of_memory_error, before any driver call, where a carve of `bytes` (`asked` before
/// rounding) is more than the device's free memory.
template <class = void>
void require_free_memory_for_carve(std::size_t bytes, std::size_t asked) {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  if (bytes > free_bytes) {
    throw_error<out_of_memory_error>(
        cudaErrorMemoryAllocation, "sleepable_pool_handle::carve",
        "a carve of " + std::to_string(asked) + " bytes (" + std::to_string(bytes) +
            " rounded up to the allocation granularity) is more than the " +
            std::to_string(free_bytes) +
            " bytes of device memory free now: carve less, or free memory first (nothing was "
            "taken)");
  }
}

} // namespace graphcap::detail::pool
