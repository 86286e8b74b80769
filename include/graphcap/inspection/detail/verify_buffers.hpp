// graphcap/inspection/detail/verify_buffers.hpp - the host memory verify() copies the outputs
// into: two buffers (the eager copy, the replay's copy), kept per thread from one call to the
// next unless verify_options::keep_host_copies is false. Host code only, no CUDA call.
//
// Why kept: glibc gives a freed block of megabytes back to the system (unmapped, or trimmed off
// the heap), so a buffer allocated per call is fresh memory and the copy from the device faults
// in every one of its pages, every call (about 2000 minor faults for the 2048 pages of two 4 MiB
// buffers, measured); at 1 Mi floats that costs several times the copies and the compare
// together (docs/debugging.md, "What verify costs"). Kept buffers stay mapped, as a hand-written
// check's vectors do.
#pragma once

#include <cstddef>
#include <memory>

namespace graphcap::detail::inspection {

/// Two host buffers of one size, grown on demand, never zeroed (the copies write every byte).
template <class = void>
class basic_host_copies {
public:
  /// Makes room for `bytes` in each buffer; growing discards what they held.
  void reserve(std::size_t bytes) {
    if (bytes <= capacity_) {
      return;
    }
    release(); // first: at most two buffers live at a time
    eager_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    replay_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    capacity_ = bytes;
  }
  /// Frees both buffers.
  void release() noexcept {
    eager_.reset();
    replay_.reset();
    capacity_ = 0;
  }
  /// The eager run's copy.
  [[nodiscard]] std::byte* eager() const noexcept { return eager_.get(); }
  /// The replay's copy.
  [[nodiscard]] std::byte* replay() const noexcept { return replay_.get(); }
  /// The size of each buffer in bytes.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

private:
  std::unique_ptr<std::byte[]> eager_;
  std::unique_ptr<std::byte[]> replay_;
  std::size_t capacity_ = 0;
};
using host_copies = basic_host_copies<>;

/// This thread's kept buffers, and whether a verify() on this thread is using them now.
struct kept_copies {
  host_copies copies;
  bool in_use = false;
};

/// This thread's kept_copies (freed when the thread exits).
template <class = void>
kept_copies& thread_copies() noexcept {
  thread_local kept_copies kept;
  return kept;
}

/// The buffers one verify() call copies into: this thread's kept ones when `keep`, else its own,
/// freed with the lease (`keep` false also frees what earlier calls kept). verify() takes it after
/// the eager work, so no user code runs while it is held; should another lease on the thread
/// hold the kept buffers all the same, this one makes its own rather than share them.
template <class = void>
class basic_copies_lease {
public:
  /// Takes this thread's kept buffers, or makes its own (see the class).
  explicit basic_copies_lease(bool keep) : kept_(thread_copies()) {
    if (kept_.in_use) {
      return;
    }
    if (!keep) {
      kept_.copies.release();
      return;
    }
    kept_.in_use = true;
    using_kept_ = true;
  }
  basic_copies_lease(const basic_copies_lease&) = delete;
  basic_copies_lease& operator=(const basic_copies_lease&) = delete;
  basic_copies_lease(basic_copies_lease&&) = delete;
  basic_copies_lease& operator=(basic_copies_lease&&) = delete;
  ~basic_copies_lease() {
    if (using_kept_) {
      kept_.in_use = false;
    }
  }

  /// The buffers to copy into.
  [[nodiscard]] host_copies& get() noexcept { return using_kept_ ? kept_.copies : own_; }
  /// True when they are this thread's kept buffers.
  [[nodiscard]] bool kept() const noexcept { return using_kept_; }

private:
  kept_copies& kept_;
  host_copies own_;
  bool using_kept_ = false;
};
using copies_lease = basic_copies_lease<>;

} // namespace graphcap::detail::inspection
