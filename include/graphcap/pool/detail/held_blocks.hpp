// graphcap/pool/detail/held_blocks.hpp - the blocks a graph's pool policy holds: in the order they
// were taken, and found by address in expected constant time.
//
// A slab pool (pool/slab.hpp) records every block its capture takes. A reset or a
// recapture gives them back in that order, so that the same allocations in the next capture get
// the same blocks; deallocate() must find a block among all of them. pool::graph_memory_nodes
// records the blocks its capture allocated, to free those the capture did not.
//
// The record is a vector (the order) with a hash index over it: open addressing, linear probing,
// a power-of-two table at most half full, each slot holding a position in the vector. A block is
// added or found in amortized O(1) (expected probes at half load: 1.5 to find a block, 2.5 to miss
// one), so a capture of N allocations and deallocations costs O(N); a linear search made it
// O(N^2), minutes for 100,000 allocations. Blocks are never removed one at a time (a deallocated
// block keeps its entry, marked freed); they go all at once (clear, release) or by a filter after
// the capture (erase_if), which rebuilds the index in place. Not internally synchronized.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace graphcap::detail::pool {

/// One block a graph holds until its next reset or recapture.
struct held_block {
  void* address = nullptr; ///< where the block starts
  std::size_t size = 0;    ///< its size (the size class, in a slab pool)
  bool freed = false;      ///< deallocated during the capture (a slab pool reuses it on its stream)
  bool pinned = false;     ///< held by an owning buffer too (graphcap::buffer)
};

/// The blocks a graph holds, in the order they were added, with an index by address.
template <class = void>
class basic_held_blocks {
public:
  /// Where the probes of the index stand, for tests: how far entries sit from their home slot.
  struct index_statistics {
    std::size_t slots = 0;        ///< the table's size (a power of two, or 0)
    std::size_t longest = 0;      ///< the most slots any entry sits past its home slot
    std::size_t displacement = 0; ///< those distances, summed over every entry
  };

  using const_iterator = std::vector<held_block>::const_iterator;

  /// Makes room for one more block, so that the next add() cannot throw. Both the vector and the
  /// index grow geometrically: amortized O(1). Throws std::bad_alloc, changing nothing.
  void reserve_one() {
    if (blocks_.size() == blocks_.capacity()) {
      blocks_.reserve(std::max(initial_capacity, 2 * blocks_.capacity()));
    }
    if (2 * (blocks_.size() + 1) > slots_.size()) {
      rebuild(std::max(2 * initial_capacity, 2 * slots_.size()));
    }
  }

  /// Appends a block not held yet (after reserve_one()) and returns its position.
  std::size_t add(void* address, std::size_t size) noexcept {
    const std::size_t position = blocks_.size();
    blocks_.push_back(held_block{address, size}); // cannot reallocate: reserve_one() made room
    place(position);
    return position;
  }

  /// The position of the block at `address`, or npos if it is not held.
  [[nodiscard]] std::size_t find(const void* address) const noexcept {
    if (slots_.empty()) {
      return npos;
    }
    for (std::size_t slot = home(address);; slot = (slot + 1) & (slots_.size() - 1)) {
      const std::size_t entry = slots_[slot];
      if (entry == empty_slot) {
        return npos; // the index is at most half full: a miss ends at an empty slot
      }
      if (blocks_[entry - 1].address == address) {
        return entry - 1;
      }
    }
  }

  /// The block at `position` (from add() or find()).
  [[nodiscard]] held_block& operator[](std::size_t position) noexcept { return blocks_[position]; }
  /// The block at `position` (from add() or find()).
  [[nodiscard]] const held_block& operator[](std::size_t position) const noexcept {
    return blocks_[position];
  }

  /// Removes the blocks `remove(block)` selects, calling it once per block in order and keeping
  /// the order of the rest; positions change. O(size + slots), no allocation. `remove` must not
  /// throw.
  template <class Predicate>
  void erase_if(Predicate remove) noexcept {
    std::size_t kept = 0;
    for (std::size_t position = 0; position < blocks_.size(); ++position) {
      if (!remove(static_cast<const held_block&>(blocks_[position]))) {
        blocks_[kept++] = blocks_[position];
      }
    }
    blocks_.resize(kept);
    rebuild_in_place();
  }

  /// Forgets every block, keeping the memory for the next capture (a recapture). O(size + slots).
  void clear() noexcept {
    blocks_.clear();
    std::fill(slots_.begin(), slots_.end(), empty_slot);
  }

  /// Forgets every block and frees the memory (a reset).
  void release() noexcept {
    std::vector<held_block>().swap(blocks_);
    std::vector<std::size_t>().swap(slots_);
  }

  /// The blocks, in the order they were added.
  [[nodiscard]] const_iterator begin() const noexcept { return blocks_.begin(); }
  /// The end of the blocks.
  [[nodiscard]] const_iterator end() const noexcept { return blocks_.end(); }
  /// How many blocks are held.
  [[nodiscard]] std::size_t size() const noexcept { return blocks_.size(); }
  /// Whether no block is held.
  [[nodiscard]] bool empty() const noexcept { return blocks_.empty(); }

  /// The index's probe distances, computed by one walk over the table (for tests).
  [[nodiscard]] index_statistics statistics() const noexcept {
    index_statistics result{slots_.size(), 0, 0};
    for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
      if (slots_[slot] != empty_slot) {
        const std::size_t distance =
            (slot - home(blocks_[slots_[slot] - 1].address)) & (slots_.size() - 1);
        result.longest = std::max(result.longest, distance);
        result.displacement += distance;
      }
    }
    return result;
  }

  /// find()'s answer for a block that is not held.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

private:
  static constexpr std::size_t initial_capacity = 16;
  static constexpr std::size_t empty_slot = 0; // a slot holds position + 1

  /// The slot an address hashes to. Blocks are aligned (256 bytes and more) and often evenly
  /// spaced, so the low bits are dropped and the rest multiplied by 2^64 / phi (Fibonacci
  /// hashing), whose top bits spread arithmetic progressions evenly over the table.
  [[nodiscard]] std::size_t home(const void* address) const noexcept {
    const auto key = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address)) >> 8;
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  /// Enters blocks_[position] in the index (which has a free slot).
  void place(std::size_t position) noexcept {
    std::size_t slot = home(blocks_[position].address);
    while (slots_[slot] != empty_slot) {
      slot = (slot + 1) & (slots_.size() - 1);
    }
    slots_[slot] = position + 1;
  }

  /// A new index of `count` slots (a power of two) over every block.
  void rebuild(std::size_t count) {
    std::vector<std::size_t> fresh(count, empty_slot); // may throw: nothing has changed yet
    slots_.swap(fresh);
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(count));
    rebuild_in_place();
  }

  /// Re-enters every block in the index's present table (there is one if a block is held).
  void rebuild_in_place() noexcept {
    if (slots_.empty()) {
      return;
    }
    std::fill(slots_.begin(), slots_.end(), empty_slot);
    for (std::size_t position = 0; position < blocks_.size(); ++position) {
      place(position);
    }
  }

  std::vector<held_block> blocks_; // in the order they were added
  std::vector<std::size_t> slots_; // the index: position + 1, or empty_slot
  unsigned shift_ = 64;            // 64 - log2(slots_.size())
};
using held_blocks = basic_held_blocks<>;

} // namespace graphcap::detail::pool
