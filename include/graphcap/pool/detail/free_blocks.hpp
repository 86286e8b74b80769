// graphcap/pool/detail/free_blocks.hpp - a pool's free blocks: first in, first out per size class,
// each handed out once the device is done with it.
//
// pool_core (pool/detail/pool_core.hpp) keeps here the blocks graphs gave back. A block is taken in
// the order blocks of its size class were given back, so that a recapture, which gives its
// blocks back in allocation order, gets the same blocks for the same allocations. A block given
// back by a graph that may still be replaying carries that graph's completion-marker event; the
// first take waits for it (cudaEventSynchronize, at capture time), and the blocks given back with
// it before that wait need no other.
//
// Cost: a std::map of size class -> std::deque, so add and take are O(log) in the size classes
// that have free blocks and O(1) in the blocks. Not internally synchronized.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/pool/detail/nvtx_regions.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <utility>

namespace graphcap::detail::pool {

/// An event that says when the device is done with a block: the last replay of the graph that
/// gave it back. Shared by every block given back at once.
using ready_event = std::shared_ptr<const event_handle>;

/// A block given back to its pool.
struct free_block {
  void* address = nullptr;           ///< where the block starts
  ready_event ready;                 ///< null: free for the device already
  nvtx_regions::heap heap = nullptr; ///< its slab's heap for memory checkers (null: none)
  bool registered = false;           ///< still a valid region for memory checkers
  std::size_t size = 0;              ///< its size class (set by take())
};

/// The free blocks of a pool, first in first out per size class.
template <class = void>
class basic_free_blocks {
public:
  /// Enters a block, last of its size class. One given back with the event take() waited for
  /// last was used after that wait: its take waits again.
  void add(std::size_t size, free_block entry) {
    if (entry.ready && entry.ready == awaited_) {
      awaited_ = nullptr;
    }
    const auto queue = queues_.try_emplace(size).first;
    try {
      queue->second.push_back(std::move(entry));
    } catch (...) {
      if (queue->second.empty()) { // every queue in the map holds a block
        queues_.erase(queue);
      }
      throw;
    }
  }

  /// The first block given back of class `size` (or, with reuse_larger(), of the smallest class
  /// at least `size` that has one, where fits_larger() allows it: `room`, a small slab can carve
  /// it without growing), taken out once the device is done with it (which may wait for its
  /// event: cuda_error if that fails, and the block stays); nullopt if there is none.
  [[nodiscard]] std::optional<free_block> take(std::size_t size, bool room) {
    const auto queue = reuse_larger_ ? queues_.lower_bound(size) : queues_.find(size);
    if (queue == queues_.end() || !fits_larger(size, queue->first, room)) {
      return std::nullopt;
    }
    free_block& first = queue->second.front();
    if (first.ready && first.ready != awaited_) {
      const relaxed_capture_mode_guard relaxed; // a global capture may be running on this thread
      check(cudaEventSynchronize(first.ready->get()), "cudaEventSynchronize");
      awaited_ = first.ready;
    }
    std::optional<free_block> taken{std::move(first)};
    taken->size = queue->first;
    queue->second.pop_front();
    if (queue->second.empty()) {
      queues_.erase(queue);
    }
    return taken;
  }

  /// Whether a request of class `size` may take a free block of class `block` (>= size): one
  /// at most twice its size, or any where carving it would take a new slab (no `room`). A small
  /// request in a much larger block holds all of it for good if it is kept (a family's outputs,
  /// each key's taking a block the larger keys' working sets need); carved where the pool has
  /// room instead, such requests share a slab.
  [[nodiscard]] static constexpr bool fits_larger(std::size_t size, std::size_t block,
                                                  bool room) noexcept {
    return block <= 2 * size || !room;
  }

  /// With `on`, take() may hand out a block of a larger class than asked for (off by default).
  void reuse_larger(bool on) noexcept { reuse_larger_ = on; }
  /// Whether take() may hand out larger blocks.
  [[nodiscard]] bool reuses_larger() const noexcept { return reuse_larger_; }

  /// Calls f(address, size class) for each free block.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [size, queue] : queues_) {
      for (const free_block& block : queue) {
        f(static_cast<const void*>(block.address), size);
      }
    }
  }

  /// Forgets every free block.
  void clear() noexcept {
    queues_.clear();
    awaited_ = nullptr;
  }

private:
  std::map<std::size_t, std::deque<free_block>> queues_; // size class -> blocks, oldest first
  ready_event awaited_;                                  // the event take() waited for last
  bool reuse_larger_ = false;                            // take() may hand out a larger class
};
using free_blocks = basic_free_blocks<>;

} // namespace graphcap::detail::pool
