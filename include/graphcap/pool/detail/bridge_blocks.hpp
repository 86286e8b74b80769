// graphcap/pool/detail/bridge_blocks.hpp - what a piecewise graph (piecewise/detail/bridges.hpp)
// reaches of its segments' slab pools to free a block in a later segment than the one that
// allocated it (a bridge across a break).
//
// Each segment of a piecewise graph is a graph with its own slab pool policy (pool/slab.hpp), all
// drawing from one pool_core. A block stays recorded by the segment that allocated it (its owner:
// its reset and recaptures give it back in allocation order, so that the same allocations get the
// same blocks again). A later segment that frees it marks it freed there, as the owner's own
// deallocate() would; a later allocation of the same step may take it again (marked in use); with
// pool::shared, a block still freed when the freeing segment's capture ends goes back to the pool
// then, as the blocks a shared-pool capture freed itself go back at its end (give_back_freed).
#pragma once

#include <graphcap/pool/detail/held_blocks.hpp>
#include <graphcap/pool/detail/pool_core.hpp>

#include <cstddef>

namespace graphcap::detail::pool {

/// Gives the blocks `held` marks freed back to `core` and forgets them (a shared pool's freed
/// blocks, when the capture that freed them ends): later captures into the pool may take them;
/// the giver's replays still use them, so memory checkers keep them valid.
template <class = void>
void give_back_freed(held_blocks& held, pool_core& core) noexcept {
  held.erase_if([&core](const held_block& entry) {
    if (entry.freed) {
      core.give_back(entry.address, entry.size, nullptr, /*still_used=*/true);
    }
    return entry.freed;
  });
}

/// A slab pool's blocks (`Policy`: a pool derived from detail::slab_pool, whose friend this is),
/// for a piecewise graph's bridges (the top of this file).
struct bridge_access {
  /// The record of `block` if `policy`'s graph holds it, else null.
  template <class Policy>
  [[nodiscard]] static const held_block* held(const Policy& policy, const void* block) noexcept {
    const std::size_t position = policy.held_.find(block);
    return position == held_blocks::npos ? nullptr : &policy.held_[position];
  }
  /// Marks a block `policy`'s graph holds freed, or in use again.
  template <class Policy>
  static void set_freed(Policy& policy, const void* block, bool freed) noexcept {
    const std::size_t position = policy.held_.find(block);
    if (position != held_blocks::npos) {
      policy.held_[position].freed = freed;
    }
  }
  /// A shared pool's blocks marked freed go back to the pool (give_back_freed); other pools keep
  /// them until reset, as they keep the blocks their own capture freed.
  template <class Policy>
  static void give_back_freed(Policy& policy) noexcept {
    if constexpr (Policy::gives_back_at_capture_end) {
      if (policy.core_) {
        pool::give_back_freed(policy.held_, *policy.core_);
      }
    }
  }
  /// Whether takes from `policy`'s pool may get a block of a larger class (a family's pool).
  template <class Policy>
  [[nodiscard]] static bool reuses_larger(const Policy& policy) noexcept {
    return policy.core_ && policy.core_->reuses_larger_blocks();
  }
  /// Whether `policy`'s pool can carve a block of class `size` without growing.
  template <class Policy>
  [[nodiscard]] static bool has_room(const Policy& policy, std::size_t size) noexcept {
    return policy.core_ && policy.core_->has_room(size);
  }
};

} // namespace graphcap::detail::pool
