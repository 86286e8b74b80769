// graphcap/pool/detail/vmm_chunks.hpp - the memory of pool::sleepable: slabs in CUDA virtual
// memory, whose physical pages can be given back and taken again at the same addresses.
//
// Slabs are handed out one after the other from arenas of reserved addresses (vmm_arenas.hpp);
// each growth maps one physical allocation (a segment: cuMemCreate, cuMemMap, cuMemSetAccess) at
// the next slab, unless the slab lies in the pool's carve, mapped in one piece ahead of time.
// pool_core carves blocks from the slabs as from any slab: a free-list hit makes no call.
//
// A segment's handle is released once mapped (the mapping keeps the memory, the unmap frees it).
// Sleep unmaps each run of contiguous segments of an arena with one cuMemUnmap (where the driver
// refuses a range over several mappings: one call per segment from then on), after copying the
// blocks in use (pool_core's ranges) to the host (host_backup.hpp). Wake maps the carve in one
// piece and one new physical allocation over each other run of contiguous slabs, and copies the
// backup back. The driver frees each physical allocation by itself (H200: 14-21 ms/GiB for a
// first sleep + wake in 2 MiB pieces, 0.4-1 in one). A freed slab's segment goes once no live
// slab shares it (the carve's stays), an arena with its last slab (the carve's with the pool).
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
#include <graphcap/pool/detail/host_backup.hpp>
#include <graphcap/pool/detail/slab_memory.hpp>
#include <graphcap/pool/detail/vmm_arenas.hpp>
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
    for (auto segment = segments_.begin(); segment != segments_.end();) { // the carve's
      const auto next = std::next(segment);
      CUresult ignored = CUDA_SUCCESS;
      static_cast<void>(drop_segment(segment, ignored));
      segment = next;
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
  /// Maps `size` bytes (rounded up to the granularity) in one piece, for the next slabs: see
  /// vmm_arenas.hpp. out_of_memory_error (nothing taken) where they are more than is free.
  void carve(std::size_t size);
  /// Bytes of the carve (0: none).
  [[nodiscard]] std::size_t carved_bytes() const noexcept {
    const std::size_t index = arenas_.carve();
    return index < arenas_.size() ? arenas_[index].carved : 0;
  }

  /// False once the driver refused to unmap a range over several mappings (see drop_run).
  [[nodiscard]] bool unmaps_runs() const noexcept { return unmap_runs_; }
  /// True when some segment still holds physical memory: a sleep has something left to do.
  [[nodiscard]] bool holds_memory() const noexcept { return !segments_.empty(); }
  /// Bytes of physical memory mapped now.
  [[nodiscard]] std::size_t resident_bytes() const noexcept { return resident_; }
  /// Bytes of the host backup (0: none): the bytes in use when the pool fell asleep.
  [[nodiscard]] std::size_t backup_bytes() const noexcept { return backup_.bytes(); }
  /// Pinned host memory held for backups (host_backup::capacity).
  [[nodiscard]] std::size_t backup_memory() const noexcept { return backup_.capacity(); }
  /// Whether wake keeps the backup's pinned memory for the next sleep.
  void keep_backup_memory(bool keep) noexcept { backup_.keep_memory(keep); }

  /// Captures into the pool in progress (begun, not ended or failed): sleep refuses while any is.
  [[nodiscard]] std::size_t open_captures() const noexcept { return captures_; }
  void capture_opened() noexcept { ++captures_; }
  void capture_closed() noexcept { --captures_; }

private:
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
    const CUresult status = vmm_back(base, segment, arenas_.device(), failed_call_);
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
           !arenas_.starts(last->first) &&
           last->first == std::prev(last)->first + std::prev(last)->second.bytes) {
      ++last;
    }
    return last;
  }
  /// Maps a new segment of `bytes` at `base` in arena `index` (and records a slab there with
  /// `slab`); where that fails, undoes it all and returns the status (failed_call_ names it).
  CUresult grow(CUdeviceptr base, std::size_t index, std::size_t bytes, bool slab) {
    const auto undo = [&] {
      if (const auto segment = segments_.find(base); segment != segments_.end()) {
        CUresult ignored = CUDA_SUCCESS;
        static_cast<void>(drop_segment(segment, ignored));
      }
      arenas_.free(index);
    };
    CUresult status = CUDA_SUCCESS;
    try {
      status = add_segment(base, bytes);
      if (status == CUDA_SUCCESS && slab) {
        slabs_.emplace(base, slab_record{bytes, index});
      }
    } catch (...) { // a missing driver function, or no memory for the record
      undo();
      throw;
    }
    if (status != CUDA_SUCCESS) {
      const char* const failed = failed_call_;
      undo();
      failed_call_ = failed;
    }
    return status;
  }
  void make_backup(const device_ranges& in_use);

  vmm_arenas arenas_;
  std::map<CUdeviceptr, slab_record> slabs_;
  std::map<CUdeviceptr, vmm_segment> segments_;
  host_backup backup_;
  std::size_t resident_ = 0;
  std::size_t captures_ = 0;
  bool unmap_runs_ = true; // the driver unmaps a range over several mappings (until refused)
  const char* failed_call_ = "cuMemCreate";
};

inline cudaError_t vmm_chunks::allocate(void** slab, std::size_t size) {
  if (asleep_) { // pool::sleepable refuses first; a pool shared otherwise lands here
    throw state_error("graphcap: a sleepable pool cannot grow while it is asleep: call wake() "
                      "first");
  }
  if (const CUresult status = arenas_.prepare(failed_call_); status != CUDA_SUCCESS) {
    return static_cast<cudaError_t>(status);
  }
  const std::size_t bytes = arenas_.round(size);
  std::size_t index = 0;
  std::size_t offset = 0;
  if (const CUresult status = arenas_.place(bytes, index, offset); status != CUDA_SUCCESS) {
    failed_call_ = "cuMemAddressReserve";
    return static_cast<cudaError_t>(status);
  }
  const CUdeviceptr base = arenas_[index].base + offset;
  if (arenas_[index].in_carve(offset, bytes)) {      // mapped already: no driver call
    slabs_.emplace(base, slab_record{bytes, index}); // may throw: nothing taken yet
    arenas_.taken(index, offset, bytes);
    *slab = vmm_pointer(base);
    return cudaSuccess;
  }
  if (const CUresult status = grow(base, index, bytes, true); status != CUDA_SUCCESS) {
    return static_cast<cudaError_t>(status);
  }
  arenas_.taken(index, offset, bytes);
  *slab = vmm_pointer(base);
  return cudaSuccess;
}

inline void vmm_chunks::carve(std::size_t size) {
  if (asleep_ || carved_bytes() > 0) {
    throw state_error(asleep_ ? "graphcap: carve() on a sleepable pool that is asleep: wake() it "
                                "first"
                              : "graphcap: carve() on a sleepable pool that has a carve already "
                                "(carved_bytes()): a pool has one carve");
  }
  if (size == 0) {
    throw error("graphcap: carve() was given 0 bytes: give the bytes the pool's captures will "
                "take (a first capture's statistics().reserved_bytes, for example)");
  }
  CUresult status = arenas_.prepare(failed_call_);
  vmm_check(status, failed_call_);
  const std::size_t bytes = arenas_.round(size);
  require_free_memory_for_carve(bytes, size); // before any driver call
  status = arenas_.add_carve(bytes);
  if (status == CUDA_SUCCESS) {
    const std::size_t index = arenas_.size() - 1;
    status = grow(arenas_[index].base, index, bytes, false);
  } else {
    failed_call_ = "cuMemAddressReserve";
  }
  if (status != CUDA_SUCCESS) {
    const char* const failed = failed_call_;
    if (status == CUDA_ERROR_OUT_OF_MEMORY) {
      vmm_check<out_of_memory_error>(status, failed,
                                     "the driver had no memory for the sleepable pool's carve "
                                     "(nothing was taken): carve less, or free memory first");
    }
    vmm_check(status, failed, "the sleepable pool's carve failed; nothing was taken");
  }
  arenas_[arenas_.size() - 1].carved = bytes;
}

inline void vmm_chunks::free(void* slab) noexcept {
  const auto found = slabs_.find(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(slab)));
  if (found == slabs_.end()) {
    return;
  }
  const CUdeviceptr base = found->first;
  const std::size_t index = found->second.arena;
  const bool carved = arenas_[index].in_carve(base - arenas_[index].base, found->second.bytes);
  backup_.forget(base, found->second.bytes); // not restored into memory that is no slab any more
  slabs_.erase(found);
  if (const auto segment = segment_at(base); !carved && segment != segments_.end()) {
    const CUdeviceptr end = segment->first + segment->second.bytes;
    const auto live = slabs_.lower_bound(segment->first);
    if (live == slabs_.end() || live->first >= end) { // no live slab shares it
      CUresult ignored = CUDA_SUCCESS;
      static_cast<void>(drop_segment(segment, ignored));
    }
  }
  arenas_.gone(index); // the carve stays, for the next slabs
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
    // The carve in one piece, then one new physical allocation over each other run of
    // contiguous slabs that no segment maps.
    if (const std::size_t index = arenas_.carve();
        index < arenas_.size() && segment_at(arenas_[index].base) == segments_.end()) {
      taken.reserve(taken.size() + 1);
      taken.push_back(arenas_[index].base);
      vmm_check_wake(add_segment(arenas_[index].base, arenas_[index].carved), failed_call_);
    }
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
  backup_.finish();
  asleep_ = false;
}

} // namespace graphcap::detail::pool
