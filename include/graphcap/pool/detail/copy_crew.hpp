// graphcap/pool/detail/copy_crew.hpp - the host side of a sleepable pool's staged backup
// (pool/detail/host_backup.hpp): pageable memory for the backup, and host threads that memcpy
// one staging buffer to or from it together.
//
// One host thread copies pinned to pageable memory at about a tenth of what the device's copies
// reach (H200, session 17's backup_bandwidth probe: 5.5 GB/s with one thread, 26 GB/s with 8,
// against 55 GB/s pinned); a crew of up to 16 (the caller and threads made for one sleep or one
// wake, joined at its end: none is held between sleeps) shares each buffer's copy. The backup's
// pages are advised huge (Linux: madvise MADV_HUGEPAGE), so the threads fault them in 2 MiB at a
// time; after the wake they are given to the kernel lazily (MADV_FREE): it takes them back when
// it needs memory, and the pages it has not taken cost the next sleep no fault.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#else
#include <cstdlib>
#endif

namespace graphcap::detail::pool {

/// `bytes` of pageable host memory for a backup (std::bad_alloc where there is none).
template <class = void>
std::byte* map_pageable(std::size_t bytes) {
#if defined(__linux__)
  void* const memory =
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    throw std::bad_alloc();
  }
  static_cast<void>(madvise(memory, bytes, MADV_HUGEPAGE)); // advice: refused is fine
  return static_cast<std::byte*>(memory);
#else
  void* const memory = std::malloc(bytes);
  if (memory == nullptr) {
    throw std::bad_alloc();
  }
  return static_cast<std::byte*>(memory);
#endif
}

/// Gives back what map_pageable(bytes) gave.
template <class = void>
void unmap_pageable(std::byte* memory, std::size_t bytes) noexcept {
#if defined(__linux__)
  static_cast<void>(munmap(memory, bytes));
#else
  static_cast<void>(bytes);
  std::free(memory);
#endif
}

/// Lets the kernel take back the pages of `bytes` at `memory` (from map_pageable) whenever it
/// needs memory, keeping the range (Linux: madvise MADV_FREE; a page it has not taken yet is
/// written again with no fault): true if so, else false and the caller unmaps it.
template <class = void>
bool free_pageable_lazily(std::byte* memory, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_FREE)
  return madvise(memory, bytes, MADV_FREE) == 0;
#else
  static_cast<void>(memory);
  static_cast<void>(bytes);
  return false;
#endif
}

/// The calling thread and up to 15 others, made for one backup's or restore's copies of at most
/// `largest` bytes each (none for copies under a few MiB), each memcpy'ing a share of a range.
template <class = void>
class basic_copy_crew {
public:
  /// Most threads, the caller included.
  static constexpr unsigned most = 16;
  /// Bytes per thread below which a copy gets no more threads.
  static constexpr std::size_t share = std::size_t{2} << 20;

  explicit basic_copy_crew(std::size_t largest) noexcept {
    const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
    const auto wanted = static_cast<unsigned>(std::min<std::size_t>(
        {std::size_t{most}, std::size_t{cores}, std::max<std::size_t>(1, largest / share)}));
    try {
      workers_.reserve(wanted - 1);
      for (unsigned t = 1; t < wanted; ++t) {
        workers_.emplace_back([this, t] { run(t); });
      }
    } catch (...) { // no thread or no memory: the threads made so far (or the caller) copy
    }
  }
  basic_copy_crew(const basic_copy_crew&) = delete;
  basic_copy_crew& operator=(const basic_copy_crew&) = delete;
  basic_copy_crew(basic_copy_crew&&) = delete;
  basic_copy_crew& operator=(basic_copy_crew&&) = delete;
  ~basic_copy_crew() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
      ++round_;
    }
    start_.notify_all();
    for (std::thread& worker : workers_) {
      worker.join();
    }
  }

  /// Copies `bytes` from `from` to `to`, the crew sharing it; returns when all is copied.
  void copy(void* to, const void* from, std::size_t bytes) noexcept {
    if (workers_.empty()) {
      std::memcpy(to, from, bytes);
      return;
    }
    {
      const std::lock_guard lock(mutex_);
      to_ = static_cast<std::byte*>(to);
      from_ = static_cast<const std::byte*>(from);
      bytes_ = bytes;
      left_ = workers_.size();
      ++round_;
    }
    start_.notify_all();
    copy_share(0, to_, from_, bytes);
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return left_ == 0; });
  }

private:
  [[nodiscard]] std::size_t threads() const noexcept { return workers_.size() + 1; }
  void copy_share(std::size_t index, std::byte* to, const std::byte* from,
                  std::size_t bytes) const noexcept {
    const std::size_t part = (bytes + threads() - 1) / threads();
    const std::size_t begin = std::min(bytes, part * index);
    const std::size_t end = std::min(bytes, begin + part);
    std::memcpy(to + begin, from + begin, end - begin);
  }
  void run(std::size_t index) noexcept {
    unsigned long long seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      start_.wait(lock, [&] { return round_ != seen; });
      seen = round_;
      if (stop_) {
        return;
      }
      std::byte* const to = to_;
      const std::byte* const from = from_;
      const std::size_t bytes = bytes_;
      lock.unlock();
      copy_share(index, to, from, bytes);
      lock.lock();
      if (--left_ == 0) {
        finished_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable finished_;
  unsigned long long round_ = 0; // one per copy, and one to stop
  std::size_t left_ = 0;         // workers still copying this round
  std::byte* to_ = nullptr;
  const std::byte* from_ = nullptr;
  std::size_t bytes_ = 0;
  bool stop_ = false;
};
using copy_crew = basic_copy_crew<>;

} // namespace graphcap::detail::pool
