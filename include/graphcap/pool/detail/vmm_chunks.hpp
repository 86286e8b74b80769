// graphcap/pool/detail/vmm_chunks.hpp - the memory of pool::sleepable: slabs in CUDA virtual
// memory, whose physical pages can be given back and taken again at the same addresses.
//
// The pool reserves an address range (an arena: cuMemAddressReserve of the device's memory size,
// another when it is used up) and hands out its slabs one after the other from it; each growth
// maps one physical allocation (a segment: cuMemCreate, cuMemMap, cuMemSetAccess) at the next
// slab. pool_core carves blocks from the slabs as from any slab: a free-list hit makes no call.
//
// A segment's handle is released once mapped (the mapping keeps the memory, the unmap frees it).
// Sleep unmaps each run of contiguous segments of an arena with one cuMemUnmap (where the driver
// refuses a range over several mappings: one call per segment from then on), after copying the
// blocks in use (pool_core's ranges, not the free ones) to pinned host memory for a backup. Wake
// maps one new physical allocation over each run of contiguous slabs and copies the backup back:
// a sleep and a wake take a few driver calls whatever the number of growths, the first sleep too
// (H200: map + unmap cost 32-37 ms per GiB in 2 MiB pieces, 0.4-0.5 ms in one). Graph nodes hold
// virtual addresses: graphs replay as they are. A freed slab's segment goes once no live slab
// shares it, an arena with its last slab.
//
// Failures leave a state a retry finishes: a segment records whether it is mapped and holds a
// handle. A sleep failing partway leaves the pool asleep (sleep() again releases the rest, wake()
// maps what is missing); a failed wake gives back what it took, stays asleep, keeps the backup.
// Driver functions come through the lazy driver layer: where the driver lacks one, only this pool
// fails, naming it. Not internally synchronized, as pool_core.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/detail/slab_memory.hpp>
#include <graphcap/pool/detail/vmm_driver.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

namespace graphcap::detail::pool {

/// The slabs of one sleepable pool, and its sleep and wake (see the top of this file).
class vmm_chunks final : public slab_source {
public:
  vmm_chunks() = default;
  vmm_chunks(const vmm_chunks&) = delete;
  vmm_chunks& operator=(const vmm_chunks&) = delete;
  vmm_chunks(vmm_chunks&&) = delete;
  vmm_chunks& operator=(vmm_chunks&&) = delete;
  /// Gives every slab back (pool_core frees its slabs first: normally none is left).
  ~vmm_chunks() override {
    while (!slabs_.empty()) {
      free(vmm_pointer(slabs_.begin()->first));
    }
  }

  /// A new slab of at least `size` bytes at `*slab` (see slab_source).
  [[nodiscard]] cudaError_t allocate(void** slab, std::size_t size) override;
  /// Forgets a slab; its segment and arena go once no live slab is in them (errors ignored).
  void free(void* slab) noexcept override;
  /// The VMM call that failed last.
  [[nodiscard]] const char* allocating_call() const noexcept override { return failed_call_; }

  /// Backs up `in_use` (`keep_contents`: ranges of the slabs, ascending), then releases every
  /// segment; the caller waited.
  void sleep(bool keep_contents, const device_ranges& in_use);
  /// Maps new physical memory over every slab and restores the backup.
  void wake();

  /// False once the driver refused to unmap a range over several mappings (see drop_run).
  [[nodiscard]] bool unmaps_runs() const noexcept { return unmap_runs_; }
  /// True when some segment still holds physical memory: a sleep has something left to do.
  [[nodiscard]] bool holds_memory() const noexcept { return !segments_.empty(); }
  /// Bytes of physical memory mapped now.
  [[nodiscard]] std::size_t resident_bytes() const noexcept { return resident_; }
  /// Bytes of the host backup (0: none): the bytes in use when the pool fell asleep.
  [[nodiscard]] std::size_t backup_bytes() const noexcept { return backup_.bytes(); }
  /// Pinned host memory held for backups (kept after wake with keep_backup_memory()).
  [[nodiscard]] std::size_t backup_memory() const noexcept { return backup_.capacity(); }
  /// Whether wake keeps the backup's pinned memory for the next sleep.
  void keep_backup_memory(bool keep) noexcept {
    keep_backup_memory_ = keep;
    if (!keep && backup_.bytes() == 0) {
      backup_.reset();
    }
  }

  /// Captures into the pool in progress (begun, not ended or failed): sleep refuses while any is.
  [[nodiscard]] std::size_t open_captures() const noexcept { return captures_; }
  void capture_opened() noexcept { ++captures_; }
  void capture_closed() noexcept { --captures_; }

private:
  struct arena {
    CUdeviceptr base = 0; // 0: freed
    std::size_t bytes = 0;
    std::size_t used = 0;  // the next slab is at base + used
    std::size_t slabs = 0; // live slabs in it
  };
  struct slab_record {
    std::size_t bytes = 0;
    std::size_t arena = 0; // index in arenas_
  };
  using segment_iterator = std::map<CUdeviceptr, vmm_segment>::iterator;

  /// The segment holding `address`, or segments_.end().
  [[nodiscard]] std::map<CUdeviceptr, vmm_segment>::iterator segment_at(CUdeviceptr address) {
    auto found = segments_.upper_bound(address);
    if (found == segments_.begin()) {
      return segments_.end();
    }
    --found;
    return address < found->first + found->second.bytes ? found : segments_.end();
  }
  /// Unbacks the segment at `at` and forgets it; false if a call failed (it stays then).
  bool drop_segment(std::map<CUdeviceptr, vmm_segment>::iterator at, CUresult& status) noexcept {
    const bool was_mapped = at->second.mapped;
    status = vmm_unback(at->first, at->second, failed_call_);
    if (was_mapped && !at->second.mapped) {
      resident_ -= at->second.bytes;
    }
    if (status != CUDA_SUCCESS) {
      return false;
    }
    segments_.erase(at);
    return true;
  }
  /// Backs a new segment of `bytes` at `base` (resident_ counts it); its status.
  CUresult add_segment(CUdeviceptr base, std::size_t bytes) {
    vmm_segment& segment = segments_[base];
    segment.bytes = bytes;
    const CUresult status = vmm_back(base, segment, device_, failed_call_);
    if (segment.mapped) {
      resident_ += bytes;
    }
    return status;
  }
  /// Unmaps the run of contiguous segments [first, last) of one arena with one call where the
  /// driver takes it, then drops each; false if a call failed (`status`).
  bool drop_run(segment_iterator first, segment_iterator last, CUresult& status) noexcept;
  /// The end of the run of mapped segments that starts at `first` (see drop_run).
  [[nodiscard]] segment_iterator run_end(segment_iterator first) const noexcept {
    auto last = std::next(first);
    while (first->second.mapped && last != segments_.end() && last->second.mapped &&
           !arena_starts(last->first) &&
           last->first == std::prev(last)->first + std::prev(last)->second.bytes) {
      ++last;
    }
    return last;
  }
  /// True where an arena starts (a run ends before it).
  [[nodiscard]] bool arena_starts(CUdeviceptr address) const noexcept {
    return std::any_of(arenas_.begin(), arenas_.end(),
                       [&](const arena& entry) { return entry.base == address; });
  }
  /// Gives back arena `index` if it holds no slab (errors ignored).
  void free_arena(std::size_t index) noexcept;
  /// Undoes a growth that failed at `base` in arena `index`.
  void undo_growth(CUdeviceptr base, std::size_t index) noexcept {
    if (const auto segment = segments_.find(base); segment != segments_.end()) {
      CUresult ignored = CUDA_SUCCESS;
      static_cast<void>(drop_segment(segment, ignored));
    }
    free_arena(index);
  }
  void make_backup(const device_ranges& in_use);

  std::vector<arena> arenas_;
  std::map<CUdeviceptr, slab_record> slabs_;
  std::map<CUdeviceptr, vmm_segment> segments_;
  host_backup backup_;
  std::size_t granularity_ = 0;
  std::size_t arena_bytes_ = 0;
  std::size_t resident_ = 0;
  std::size_t captures_ = 0;
  int device_ = 0;
  bool keep_backup_memory_ = false;
  bool unmap_runs_ = true; // the driver unmaps a range over several mappings (until refused)
  const char* failed_call_ = "cuMemCreate";
};

inline cudaError_t vmm_chunks::allocate(void** slab, std::size_t size) {
  if (asleep_) { // pool::sleepable refuses first; a pool shared otherwise lands here
    throw state_error("graphcap: a sleepable pool cannot grow while it is asleep: call wake() "
                      "first");
  }
  if (granularity_ == 0) {
    check(cudaGetDevice(&device_), "cudaGetDevice");
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    std::size_t granularity = 0;
    if (const CUresult status = vmm().granularity.require(sleepable_needs)(
            &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        status != CUDA_SUCCESS) {
      failed_call_ = "cuMemGetAllocationGranularity";
      return static_cast<cudaError_t>(status);
    }
    std::size_t free = 0;
    std::size_t total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    granularity_ = granularity;
    arena_bytes_ = (total + granularity - 1) / granularity * granularity; // all it could map
  }
  const std::size_t bytes = (size + granularity_ - 1) / granularity_ * granularity_;
  if (arenas_.empty() || arenas_.back().base == 0 ||
      arenas_.back().bytes - arenas_.back().used < bytes) {
    arenas_.reserve(arenas_.size() + 1); // so that push_back cannot throw once reserved
    arena fresh;
    fresh.bytes = std::max(arena_bytes_, bytes);
    if (const CUresult status =
            vmm().address_reserve.require(sleepable_needs)(&fresh.base, fresh.bytes, 0, 0, 0);
        status != CUDA_SUCCESS) {
      failed_call_ = "cuMemAddressReserve";
      return static_cast<cudaError_t>(status);
    }
    arenas_.push_back(fresh);
  }
  const std::size_t index = arenas_.size() - 1;
  const CUdeviceptr base = arenas_[index].base + arenas_[index].used;
  CUresult status = CUDA_SUCCESS;
  try {
    status = add_segment(base, bytes);
    if (status == CUDA_SUCCESS) {
      slabs_.emplace(base, slab_record{bytes, index});
    }
  } catch (...) { // a missing driver function, or no memory for the record
    undo_growth(base, index);
    throw;
  }
  if (status != CUDA_SUCCESS) {
    const char* const failed = failed_call_;
    undo_growth(base, index);
    failed_call_ = failed;
    return static_cast<cudaError_t>(status);
  }
  arenas_[index].used += bytes;
  ++arenas_[index].slabs;
  *slab = vmm_pointer(base);
  return cudaSuccess;
}

inline void vmm_chunks::free_arena(std::size_t index) noexcept {
  arena& entry = arenas_[index];
  if (entry.base == 0 || entry.slabs > 0) {
    return;
  }
  if (const auto address_free = vmm().address_free.find(); address_free != nullptr) {
    static_cast<void>(address_free(entry.base, entry.bytes));
  }
  entry = arena{};
  while (!arenas_.empty() && arenas_.back().base == 0) {
    arenas_.pop_back();
  }
}

inline void vmm_chunks::free(void* slab) noexcept {
  const auto found = slabs_.find(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(slab)));
  if (found == slabs_.end()) {
    return;
  }
  const CUdeviceptr base = found->first;
  const std::size_t index = found->second.arena;
  backup_.forget(base, found->second.bytes); // not restored into memory that is no slab any more
  slabs_.erase(found);
  --arenas_[index].slabs;
  if (const auto segment = segment_at(base); segment != segments_.end()) {
    const CUdeviceptr end = segment->first + segment->second.bytes;
    const auto live = slabs_.lower_bound(segment->first);
    if (live == slabs_.end() || live->first >= end) { // no live slab shares it
      CUresult ignored = CUDA_SUCCESS;
      static_cast<void>(drop_segment(segment, ignored));
    }
  }
  free_arena(index);
}

inline void vmm_chunks::make_backup(const device_ranges& in_use) {
  device_ranges mapped; // a failed sleep may have released some already
  for (const auto& [base, bytes] : in_use) {
    const auto segment = segment_at(base);
    if (segment != segments_.end() && segment->second.mapped) {
      mapped.emplace_back(base, bytes);
    }
  }
  if (!mapped.empty()) {
    backup_.save(mapped);
  }
}

inline bool vmm_chunks::drop_run(segment_iterator first, segment_iterator last,
                                 CUresult& status) noexcept {
  if (unmap_runs_ && std::next(first) != last) {
    std::size_t bytes = 0;
    for (auto segment = first; segment != last; ++segment) {
      bytes += segment->second.bytes;
    }
    const auto unmap = vmm().unmap.find();
    status = unmap != nullptr ? unmap(first->first, bytes) : CUDA_ERROR_NOT_FOUND;
    if (status == CUDA_SUCCESS) {
      for (auto segment = first; segment != last; ++segment) {
        segment->second.mapped = false;
      }
      resident_ -= bytes;
    } else if (status == CUDA_ERROR_INVALID_VALUE) {
      unmap_runs_ = false; // this driver wants each mapping unmapped by itself
    } else {
      failed_call_ = "cuMemUnmap";
      return false;
    }
  }
  while (first != last) {
    const auto next = std::next(first);
    if (!drop_segment(first, status)) {
      return false;
    }
    first = next;
  }
  return true;
}

inline void vmm_chunks::sleep(bool keep_contents, const device_ranges& in_use) {
  if (keep_contents && backup_.data() == nullptr) {
    make_backup(in_use); // throws with nothing changed
  }
  asleep_ = true; // from here on, replays, captures and allocations are refused
  for (auto run = segments_.begin(); run != segments_.end();) {
    const auto last = run_end(run);
    CUresult status = CUDA_SUCCESS;
    if (!drop_run(run, last, status)) {
      throw_error(static_cast<cudaError_t>(status), failed_call_,
                  "the sleepable pool is asleep with some of its memory still held: call "
                  "sleep() again to release the rest, or wake()");
    }
    run = last;
  }
}

inline void vmm_chunks::wake() {
  std::vector<CUdeviceptr> taken; // segments this wake made: given back if it fails
  try {
    // A segment a failed sleep could not release, but unmapped: release it now.
    for (auto segment = segments_.begin(); segment != segments_.end();) {
      const auto next = std::next(segment);
      CUresult status = CUDA_SUCCESS;
      if (!segment->second.mapped && !drop_segment(segment, status)) {
        vmm_check_wake(status, failed_call_);
      }
      segment = next;
    }
    // One new physical allocation over each run of contiguous slabs that no segment maps.
    auto slab = slabs_.begin();
    while (slab != slabs_.end()) {
      if (segment_at(slab->first) != segments_.end()) {
        ++slab;
        continue;
      }
      const CUdeviceptr start = slab->first;
      std::size_t bytes = 0;
      for (const std::size_t arena = slab->second.arena;
           slab != slabs_.end() && slab->first == start + bytes && slab->second.arena == arena &&
           segment_at(slab->first) == segments_.end();
           ++slab) {
        bytes += slab->second.bytes;
      }
      taken.reserve(taken.size() + 1);
      taken.push_back(start); // before the segment exists: the rollback finds it or nothing
      const CUresult status = add_segment(start, bytes); // sets failed_call_: read it after
      vmm_check_wake(status, failed_call_);
    }
    backup_.restore();
  } catch (...) {
    for (const CUdeviceptr start : taken) {
      if (const auto segment = segments_.find(start); segment != segments_.end()) {
        CUresult ignored = CUDA_SUCCESS;
        static_cast<void>(drop_segment(segment, ignored));
      }
    }
    throw;
  }
  if (keep_backup_memory_) {
    backup_.clear();
  } else {
    backup_.reset();
  }
  asleep_ = false;
}

} // namespace graphcap::detail::pool
