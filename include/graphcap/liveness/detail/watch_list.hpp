// graphcap/liveness/detail/watch_list.hpp - what liveness::check asks before a replay: one
// representative address per input allocation and the liveness tokens, with the free-watch epoch
// that lets a replay skip the driver queries. basic_check holds one for its graph; a
// liveness_step_check holds the union of several graphs' (a piecewise graph's segments), each
// allocation once, so that a step asks about an allocation its segments share (weights, a KV
// cache) once instead of once per segment.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/liveness/detail/free_epoch.hpp>
#include <graphcap/liveness/detail/inputs.hpp>

#include <cuda.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace graphcap::detail::liveness {

/// A stamp that changes whenever a watch list does: unique in the process (0: an empty list
/// never built), so a step check compares its segments' stamps to know it is current.
inline std::uint64_t liveness_watch_stamps = 0;
[[nodiscard]] inline std::uint64_t next_watch_stamp() noexcept {
  return __atomic_add_fetch(&liveness_watch_stamps, 1, __ATOMIC_RELAXED);
}

/// One representative address per allocation, its buffer id, and the tokens. A template with an
/// unused parameter, named through liveness_watch_list, so that its bodies (and the std::vector
/// members they instantiate) compile only in a TU that uses them (docs/design.md, "Compile time").
template <class = void>
class basic_liveness_watch_list {
public:
  struct watched_allocation {
    CUdeviceptr address = 0;
    unsigned long long buffer_id = 0;
  };

  /// Empties the list (its capacity kept: a rebuild after a rebind allocates nothing).
  void clear() noexcept {
    watched_.clear();
    tokens_.clear();
    checked_epoch_ = 0;
    stamp_ = 0;
  }

  /// Starts a new list (the next check asks about all of it).
  void restart() noexcept {
    clear();
    stamp_ = next_watch_stamp();
  }
  /// Adds an allocation (finish() drops the repeats).
  void add(CUdeviceptr address, unsigned long long buffer_id) {
    watched_.push_back({address, buffer_id});
  }
  void add_token(const std::weak_ptr<const void>& token) { tokens_.push_back(token); }
  /// Adds another list's allocations and tokens.
  void add_all(const basic_liveness_watch_list& other) {
    watched_.insert(watched_.end(), other.watched_.begin(), other.watched_.end());
    tokens_.insert(tokens_.end(), other.tokens_.begin(), other.tokens_.end());
  }
  /// Done adding: each allocation once (by buffer id; any of its addresses answers for it).
  /// Sorted in place, no allocation: a rebind rebuilds its lists at every step.
  void finish() noexcept {
    std::sort(watched_.begin(), watched_.end(),
              [](const auto& a, const auto& b) { return a.buffer_id < b.buffer_id; });
    watched_.erase(
        std::unique(watched_.begin(), watched_.end(),
                    [](const auto& a, const auto& b) { return a.buffer_id == b.buffer_id; }),
        watched_.end());
  }

  [[nodiscard]] std::uint64_t stamp() const noexcept { return stamp_; }
  [[nodiscard]] std::uint64_t full_checks() const noexcept {
    return __atomic_load_n(&full_checks_, __ATOMIC_RELAXED);
  }

  /// True if every allocation is alive and unreplaced and no token expired. While a
  /// liveness::free_watch runs and nothing was freed since the last check that passed, the
  /// allocations are not asked about again: one load instead. False goes to the caller's cold
  /// diagnosis (only CUDA_ERROR_INVALID_VALUE means freed; it tells them apart).
  [[nodiscard]] bool passes(liveness_pointer_query query) const {
    const std::uint64_t epoch = trusted_free_epoch();
    if (!free_epoch_watched(epoch) || epoch != __atomic_load_n(&checked_epoch_, __ATOMIC_RELAXED)) {
      __atomic_fetch_add(&full_checks_, 1, __ATOMIC_RELAXED);
      for (const watched_allocation& watched : watched_) {
        unsigned long long buffer_id = 0;
        const CUresult status = query(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, watched.address);
        if (status != CUDA_SUCCESS || buffer_id != watched.buffer_id) [[unlikely]] {
          return false;
        }
      }
      // Read before the queries: a free that ended during them moved it, and is checked next time.
      __atomic_store_n(&checked_epoch_, epoch, __ATOMIC_RELAXED);
    }
    for (const std::weak_ptr<const void>& token : tokens_) {
      if (token.expired()) [[unlikely]] {
        return false;
      }
    }
    return true;
  }

private:
  std::vector<watched_allocation> watched_; // what a replay asks about
  std::vector<std::weak_ptr<const void>> tokens_;
  // The free epoch (free_epoch.hpp) at the last full check that passed, 0 if not trusted.
  // Written by the const check: atomic builtins, as replays may come from threads.
  mutable std::uint64_t checked_epoch_ = 0;
  mutable std::uint64_t full_checks_ = 0; // the full check's path only (tests, diagnostics)
  std::uint64_t stamp_ = 0;               // next_watch_stamp() at the last restart(), 0 if none
};
using liveness_watch_list = basic_liveness_watch_list<>;

/// The inputs of several graphs checked as one (liveness::check's step_check: a piecewise
/// graph's segments). Rebuilt when a part's list changed (its stamp); a check that fails is
/// handed to the parts in order, whose own check throws liveness_error naming the inputs.
template <class Check>
class liveness_step_check {
public:
  /// Whether the union was built from exactly these parts as they are now.
  [[nodiscard]] bool current(std::span<const Check* const> parts) const noexcept {
    if (parts.size() != parts_.size()) {
      return false;
    }
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (parts[k] != parts_[k].part || parts[k]->watch_list().stamp() != parts_[k].stamp) {
        return false;
      }
    }
    return true;
  }

  void rebuild(std::span<const Check* const> parts) {
    parts_.clear();
    list_.restart();
    query_ = nullptr;
    for (const Check* part : parts) {
      parts_.push_back({part, part->watch_list().stamp()});
      list_.add_all(part->watch_list());
      if (query_ == nullptr) {
        query_ = part->pointer_query();
      }
    }
    list_.finish();
  }

  /// Refuses (liveness_error from the part whose input died) before anything is launched.
  void before_replay(cudaStream_t stream) const {
    if (!list_.passes(query_)) [[unlikely]] {
      for (const part_stamp& part : parts_) {
        part.part->before_replay(stream); // the one that lost an input throws, naming it
      }
    }
  }

private:
  struct part_stamp {
    const Check* part = nullptr;
    std::uint64_t stamp = 0;
  };
  std::vector<part_stamp> parts_;
  liveness_watch_list list_;
  liveness_pointer_query query_ = nullptr; // the parts' (one driver function for all)
};

} // namespace graphcap::detail::liveness
