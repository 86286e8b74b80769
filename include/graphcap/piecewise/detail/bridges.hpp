// graphcap/piecewise/detail/bridges.hpp - blocks that cross a break: allocated in one segment of a
// piecewise capture and freed in a later one (docs/piecewise.md, "Bridges").
//
// Every segment is a graph with its own slab pool policy over one pool_core, and each records the
// blocks it allocated (pool/detail/bridge_blocks.hpp). A segment's own deallocate() finds only its
// blocks; cap.deallocate() asks here first. A block another segment holds:
//  - held by an earlier segment k and in use: freed as a bridge. It stays k's (its reset and
//    recaptures give it back in k's allocation order), marked freed, and later allocations of
//    the step may take it again: in the freeing segment on the same stream (stream order, as a
//    segment reuses what it freed itself), in any later segment on any stream (the segments of a
//    step run one after the other on one stream, each to its end). With pool::shared, a bridge
//    still freed when the freeing segment's capture ends goes back to the pool then, as the
//    blocks a shared-pool capture freed itself do: later captures (smaller keys of a family) and
//    the later segments take it from there;
//  - freed already (by a segment, or given back): bridge_error naming the segments;
//  - held by a later segment (of the capture a recapture replaces): bridge_error.
// Any other pointer goes to the segment's deallocate(), which refuses it as a graph does.
#pragma once

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/detail/allocation_size.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/error.hpp>
#include <graphcap/piecewise/bridge_error.hpp>
#include <graphcap/pool/slab.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphcap::detail::piecewise {

/// The bridges of one piecewise capture of segments of `Graph` (the top of this file).
template <class Graph>
class bridges : core_extension {
  using access = graphcap::detail::pool::bridge_access;
  using segment_list = std::vector<std::unique_ptr<Graph>>;

public:
  /// Whether the segments' pool is a slab pool, whose blocks can cross breaks.
  static constexpr bool enabled =
      graphcap::detail::contract::has_bridges<typename Graph::pool_type>;

  /// Frees `block` as a bridge if another segment than `current` holds it; false: it is not a
  /// bridge, the current segment's deallocate() takes it (or refuses it). bridge_error for a
  /// bridge freed twice or before the segment that allocated it; nothing changes then.
  bool deallocate(segment_list& all, std::size_t current, const void* block, cudaStream_t stream) {
    if constexpr (enabled) {
      if (access::held(pool_of(all, current), block) != nullptr) {
        return false; // the segment's own block
      }
      std::size_t owner = 0;
      const graphcap::detail::pool::held_block* held = nullptr;
      for (; owner < all.size() && held == nullptr; ++owner) {
        held = owner == current ? nullptr : access::held(pool_of(all, owner), block);
      }
      const auto record = freed_.find(block);
      if (held == nullptr) {
        if (record != freed_.end()) { // a shared pool's bridge, given back when its segment ended
          throw bridge_error(bridge_error::reason::freed_twice, record->second.owner, current,
                             record->second.freed_in);
        }
        return false;
      }
      --owner;
      if (owner > current) {
        throw bridge_error(bridge_error::reason::before_allocation, owner, current);
      }
      if (held->freed) {
        const bool bridged = record != freed_.end() && record->second.owner == owner;
        throw bridge_error(bridge_error::reason::freed_twice, owner, current,
                           bridged ? record->second.freed_in : owner);
      }
      if (held->pinned) {
        throw error("graphcap: deallocate() was given the memory of a graphcap::buffer; a buffer "
                    "gives its memory back when its last copy is dropped (buffer::reset())");
      }
      std::vector<entry>& queue = this_segment_[{stream, held->size}];
      queue.push_back(entry{const_cast<void*>(block), owner}); // may throw: nothing changed yet
      try {
        freed_.insert_or_assign(block, free_record{owner, current});
      } catch (...) {
        queue.pop_back();
        throw;
      }
      access::set_freed(pool_of(all, owner), block, true);
      return true;
    } else {
      return false;
    }
  }

  /// A block for `count` objects of T on `stream` that a bridge freed earlier in the step, taken
  /// again (see the top of this file); null if there is none: the segment allocates.
  template <class T, class Count, class... Stream>
  [[nodiscard]] void* reuse(segment_list& all, std::size_t current, cudaStream_t capture_stream,
                            const Count& count, const Stream&... stream) {
    static_assert(sizeof...(Stream) <= 1);
    if constexpr (enabled && std::integral<Count>) {
      if (this_segment_.empty() && earlier_.empty()) {
        return nullptr; // no bridge freed (the usual case)
      }
      const std::size_t bytes = allocation_bytes<T>(element_count<T>(count, "allocate"));
      const std::size_t size = graphcap::detail::pool::pool_core::size_class(bytes);
      cudaStream_t on = capture_stream;
      if constexpr (sizeof...(Stream) == 1) {
        on = stream_ref(stream...).get();
      }
      auto& policy = pool_of(all, current);
      const bool or_larger = access::reuses_larger(policy);
      const bool room = access::has_room(policy, size);
      const auto fits = [room](std::size_t request, std::size_t block) {
        return graphcap::detail::pool::free_blocks::fits_larger(request, block, room);
      };
      for (auto queue = this_segment_.lower_bound({on, size});
           queue != this_segment_.end() && queue->first.first == on &&
           (or_larger ? fits(size, queue->first.second) : queue->first.second == size);
           ++queue) {
        if (!queue->second.empty()) {
          return take(all, queue->second, policy);
        }
      }
      for (auto queue = earlier_.lower_bound(size);
           queue != earlier_.end() && (or_larger ? fits(size, queue->first) : queue->first == size);
           ++queue) {
        if (!queue->second.empty()) {
          return take(all, queue->second, policy);
        }
      }
    }
    return nullptr;
  }

  /// The current segment's capture ended: the bridges it freed go back to a shared pool (each
  /// segment that holds one gives its freed blocks back once), or stay for the later segments.
  void segment_ended(segment_list& all) noexcept {
    if constexpr (enabled) {
      if (this_segment_.empty()) {
        return;
      }
      if constexpr (Graph::pool_type::gives_back_at_capture_end) {
        for (std::size_t owner = 0; owner < all.size(); ++owner) {
          if (holds_one(owner)) {
            access::give_back_freed(pool_of(all, owner));
          }
        }
      } else {
        for (const auto& [key, queue] : this_segment_) {
          for (const entry& freed : queue) {
            try {
              earlier_[key.second].push_back(freed);
            } catch (...) { // out of memory: the block stays freed, not reused in this step
            }
          }
        }
      }
      this_segment_.clear();
    }
  }

private:
  struct entry {
    void* block;
    std::size_t owner; // the segment that allocated it and holds it
  };
  struct free_record {
    std::size_t owner;
    std::size_t freed_in;
  };

  static auto& pool_of(segment_list& all, std::size_t k) noexcept {
    return policy_access::pool(*all[k], key());
  }

  [[nodiscard]] bool holds_one(std::size_t owner) const noexcept {
    for (const auto& [key, queue] : this_segment_) {
      for (const entry& freed : queue) {
        if (freed.owner == owner) {
          return true;
        }
      }
    }
    return false;
  }

  template <class Policy>
  void* take(segment_list& all, std::vector<entry>& queue, Policy& policy) {
    policy.check_capture(); // refused while the pool sleeps, as a segment's own reuse is
    const entry taken = queue.back();
    queue.pop_back();
    access::set_freed(pool_of(all, taken.owner), taken.block, false);
    freed_.erase(taken.block);
    return taken.block;
  }

  // Bridges freed in the segment being captured, by stream and size class, last freed last.
  std::map<std::pair<cudaStream_t, std::size_t>, std::vector<entry>> this_segment_;
  // Bridges freed in an earlier segment of the step and not taken again, by size class.
  std::map<std::size_t, std::vector<entry>> earlier_;
  // Every bridge freed in this capture and not taken again by this scope: who holds it, who freed
  // it.
  std::unordered_map<const void*, free_record> freed_;
};

} // namespace graphcap::detail::piecewise
