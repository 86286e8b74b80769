// graphcap/pool/detail/host_backup.hpp - a sleeping pool::sleepable pool's contents on the host
// (pool/detail/vmm_chunks.hpp): the blocks in use, range by range, and how they get there.
//
// Two ways, by what the pool may hold between sleeps:
//  - staged (the default): the backup lives in pageable host memory mapped at the first sleep
//    (huge pages advised, so that the kernel faults it in 2 MiB at a time); once the wake has
//    copied it back its pages are the kernel's to take back when it needs memory (MADV_FREE),
//    and those it has not taken cost the next sleep no page fault. The copies go through a ring
//    of two pinned buffers of up to 32 MiB (staging_bytes), kept from one sleep to the next (the
//    pinned memory held between sleeps: 64 MiB at most, backup_memory()): the device copies one
//    buffer while host threads (copy_crew, made for one sleep or wake) memcpy the other to or
//    from the backup. A fresh pinned buffer of the whole size each sleep (what sleep did
//    before) reached 2.5% of a pinned copy's bandwidth on the H200 (cudaMallocHost pins page by
//    page); copies of pageable memory 13-20%
//    (docs/results/2026-12-04-h200-session17/probes/backup_bandwidth.log).
//  - kept (keep_memory(true), sleepable_pool_handle::keep_backup_memory): one pinned buffer of
//    the backup's size, kept after the wake, copied into directly: the fastest cycles, for pinned
//    host memory held while awake.
// benchmark/probes/backup_strategies.cu compares the ways at 64 MiB - 1 GiB.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/pool/detail/copy_crew.hpp>
#include <graphcap/pool/detail/vmm_driver.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <utility>
#include <vector>

namespace graphcap::detail::pool {

/// A sleeping pool's contents on the host, range by range (the blocks in use), the stream of
/// their copies, and the pinned memory kept for the next backup (see the top of this file).
template <class = void>
class basic_host_backup {
public:
  /// The size of each of the two pinned staging buffers at most.
  static constexpr std::size_t staging_bytes = std::size_t{32} << 20;

  basic_host_backup() noexcept = default;
  basic_host_backup(const basic_host_backup&) = delete;
  basic_host_backup& operator=(const basic_host_backup&) = delete;
  basic_host_backup(basic_host_backup&&) = delete;
  basic_host_backup& operator=(basic_host_backup&&) = delete;
  ~basic_host_backup() { reset(); }

  /// Copies each of `slabs` (ranges of them, none across two) to the host, contiguous ranges in
  /// one copy, and waits for the copies. On failure there is no backup, and it throws.
  void save(const device_ranges& slabs) {
    const relaxed_capture_mode_guard relaxed; // another thread may capture (global mode)
    std::size_t bytes = 0;
    for (const auto& [base, size] : slabs) {
      bytes += size;
    }
    take_memory(bytes);
    try {
      std::size_t offset = 0;
      for (const auto& [base, size] : slabs) {
        entries_.emplace(base, std::pair{offset, size});
        offset += size;
      }
      bytes_ = bytes;
      copy(/*to_host=*/true);
    } catch (...) {
      clear(); // a retry finds the memory
      throw;
    }
  }
  /// Copies the backup back to the slabs it still has, and waits for the copies.
  void restore() {
    const relaxed_capture_mode_guard relaxed;
    copy(/*to_host=*/false);
  }
  /// The wake is done: the backup goes; kept pinned memory stays (keep_memory), pageable
  /// memory stays reserved with its pages the kernel's to take back (free_pageable_lazily).
  void finish() noexcept {
    clear();
    if (data_ != nullptr && (pinned_ ? !keep_ : !free_pageable_lazily(data_, capacity_))) {
      free_data();
    }
  }
  /// Whether the backup's own pinned memory is kept from one sleep to the next. Off: what is
  /// kept goes now unless a backup is in it (then at finish()), the staging buffers too.
  void keep_memory(bool keep) noexcept {
    keep_ = keep;
    if (!keep && bytes_ == 0) {
      reset();
    }
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
  /// No backup, and every host memory freed, the staging buffers too.
  void reset() noexcept {
    free_data();
    for (std::byte*& buffer : staging_) {
      if (buffer != nullptr) {
        ignore(cudaFreeHost(buffer));
      }
      buffer = nullptr;
    }
    staging_size_ = 0;
    clear();
  }
  /// The backup (null when there is none).
  [[nodiscard]] std::byte* data() const noexcept { return bytes_ > 0 ? data_ : nullptr; }
  /// The backup's size (0: none).
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// The pinned host memory held, backup or not: a kept backup's, the staging buffers'.
  [[nodiscard]] std::size_t capacity() const noexcept {
    return (pinned_ ? capacity_ : 0) + 2 * staging_size_;
  }
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
  /// One copy between a device range and the backup.
  struct piece {
    CUdeviceptr device;
    std::size_t host; // offset in data_
    std::size_t bytes;
  };

  /// Memory for a backup of `bytes`: kept pinned memory where it is kept and large enough,
  /// new pinned memory where it is to be kept, else pageable memory and the staging buffers.
  void take_memory(std::size_t bytes) {
    if (data_ != nullptr && capacity_ >= bytes && pinned_ == keep_) {
      return;
    }
    free_data();
    if (keep_) {
      void* memory = nullptr;
      check(cudaMallocHost(&memory, bytes), "cudaMallocHost");
      data_ = static_cast<std::byte*>(memory);
      pinned_ = true;
    } else {
      const std::size_t staging = std::min(staging_bytes, bytes);
      if (staging_size_ < staging) {
        for (std::byte*& buffer : staging_) {
          if (buffer != nullptr) {
            ignore(cudaFreeHost(buffer));
            buffer = nullptr;
          }
        }
        staging_size_ = 0;
        for (std::byte*& buffer : staging_) {
          void* memory = nullptr;
          check(cudaMallocHost(&memory, staging), "cudaMallocHost");
          buffer = static_cast<std::byte*>(memory);
        }
        staging_size_ = staging;
      }
      data_ = map_pageable(bytes); // std::bad_alloc where the host has none
      pinned_ = false;
    }
    capacity_ = bytes;
  }
  void free_data() noexcept {
    if (data_ != nullptr) {
      if (pinned_) {
        ignore(cudaFreeHost(data_));
      } else {
        unmap_pageable(data_, capacity_);
      }
    }
    data_ = nullptr;
    capacity_ = 0;
    pinned_ = false;
  }

  /// The copies, each no larger than a staging buffer where they are staged.
  [[nodiscard]] std::vector<piece> pieces() const {
    std::vector<piece> all;
    const std::size_t most = pinned_ ? ~std::size_t{0} : staging_size_;
    for_each_run([&](CUdeviceptr device, std::size_t host, std::size_t size) {
      for (std::size_t at = 0; at < size; at += most) {
        all.push_back(piece{device + at, host + at, std::min(most, size - at)});
      }
    });
    return all;
  }

  /// Copies every piece to the host (`to_host`) or back, and waits for the copies.
  void copy(bool to_host) {
    const std::vector<piece> all = pieces();
    const auto device_copy = [&](const piece& part, void* host) {
      void* const device = vmm_pointer(part.device);
      check(to_host ? cudaMemcpyAsync(host, device, part.bytes, cudaMemcpyDeviceToHost, stream())
                    : cudaMemcpyAsync(device, host, part.bytes, cudaMemcpyHostToDevice, stream()),
            "cudaMemcpyAsync");
    };
    if (pinned_) {
      for (const piece& part : all) {
        device_copy(part, data_ + part.host);
      }
      check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
      return;
    }
    if (all.empty()) {
      return;
    }
    make_events();
    copy_crew crew(staging_size_);
    const auto staged = [&](std::size_t index) { return staging_[index % 2]; };
    const auto copied = [&](std::size_t index) { return done_[index % 2].get(); };
    if (to_host) { // the device fills one buffer while the crew empties the other
      device_copy(all[0], staged(0));
      check(cudaEventRecord(copied(0), stream()), "cudaEventRecord");
      for (std::size_t index = 0; index < all.size(); ++index) {
        if (index + 1 < all.size()) {
          device_copy(all[index + 1], staged(index + 1));
          check(cudaEventRecord(copied(index + 1), stream()), "cudaEventRecord");
        }
        check(cudaEventSynchronize(copied(index)), "cudaEventSynchronize");
        crew.copy(data_ + all[index].host, staged(index), all[index].bytes);
      }
      return;
    }
    for (std::size_t index = 0; index < all.size(); ++index) { // the crew fills, the device
      if (index >= 2) {                                        // empties
        check(cudaEventSynchronize(copied(index)), "cudaEventSynchronize");
      }
      crew.copy(staged(index), data_ + all[index].host, all[index].bytes);
      device_copy(all[index], staged(index));
      check(cudaEventRecord(copied(index), stream()), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }
  void make_events() {
    for (event_handle& event : done_) {
      if (!event) {
        cudaEvent_t made = nullptr;
        check(cudaEventCreateWithFlags(&made, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        event.reset(made);
      }
    }
  }

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
  std::size_t capacity_ = 0; // bytes of data_
  std::size_t bytes_ = 0;    // the backup's (0: none)
  std::byte* staging_[2] = {nullptr, nullptr};
  std::size_t staging_size_ = 0; // bytes of each staging buffer
  event_handle done_[2];         // each staging buffer's last device copy
  stream_handle stream_;
  bool pinned_ = false; // data_ is pinned (else pageable, mapped for the backup)
  bool keep_ = false;   // keep_memory()
};
using host_backup = basic_host_backup<>;

} // namespace graphcap::detail::pool
