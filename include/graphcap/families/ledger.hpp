// graphcap/families/ledger.hpp - what a graph_family holds of the device, key by key:
// graph_family::ledger(), and what `std::cout << family` prints after its table.
//
// Pool figures are the pool's own counts (pool_statistics: exact to the byte, from the slabs it
// reserved and the blocks it handed out), and the device bytes its growth took (cudaMemGetInfo's
// drop at each slab: a stream-ordered pool reserves 32 MiB for a 2 MiB slab on an H100, and a
// budget must count that). Executable figures are cudaMemGetInfo's drops measured
// around each of graphcap's instantiations under one process-wide lock, spread over the keys by
// the nodes that take executable memory: they add up to the measured total, which is exact to
// what the driver took from the device meanwhile (its 2 MiB pieces; other code's allocations at
// that moment count too). families/detail/executable_memory.hpp says what the driver does.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/families/detail/family_support.hpp>
#include <graphcap/families/family_types.hpp>

#include <algorithm>
#include <cstddef>
#include <iomanip>
#include <ostream>
#include <vector>

namespace graphcap {

/// One key of a family_ledger.
template <class Key>
struct ledger_row {
  Key key;                               ///< the key
  std::size_t nodes = 0;                 ///< its graph's nodes
  std::size_t executable_nodes = 0;      ///< of those, the nodes that take executable memory
  std::size_t pool_reserved_bytes = 0;   ///< what the pool grew by for its capture
  std::size_t pool_device_bytes = 0;     ///< what that growth took of the device (lumpy)
  std::size_t pool_in_use_bytes = 0;     ///< what its capture left in use in the pool
  std::size_t pool_high_water_bytes = 0; ///< the most the pool had in use during its capture
  /// Its share of the executables' measured bytes (by executable_nodes; the shares add up to
  /// family_ledger::executable_bytes)
  std::size_t executable_bytes = 0;
  std::size_t measured_bytes = 0; ///< cudaMemGetInfo's drops at its own instantiations (lumpy)
  bool executable = false;        ///< it holds an executable now (false: released, or a template)
  /// What a capture of this key in a new family would add now, from this capture's figures: its
  /// executable share, and its pool growth's device bytes unless the room the pool's allocator
  /// holds free now (a stream-ordered pool's reserve beyond its allocations, read at ledger(),
  /// drawn down by the rows before it) takes the growth (a prediction exact to 2 MiB)
  std::size_t would_add_bytes = 0;
};

/// What a family holds of the device, per key and in all; see the header comment.
template <class Key>
struct family_ledger {
  std::vector<ledger_row<Key>> rows;   ///< smallest key first
  std::size_t pool_reserved_bytes = 0; ///< the pool's slabs now (pool_statistics)
  /// What the pool's slabs took of the device (pool_statistics::device_bytes): the slabs and an
  /// allocator's reserve beyond them
  std::size_t pool_device_bytes = 0;
  std::size_t pool_in_use_bytes = 0;     ///< the pool's blocks in use now
  std::size_t pool_high_water_bytes = 0; ///< the most in use during any key's capture, or since
  /// The executables' measured bytes: what the driver took for this family's instantiations
  std::size_t executable_bytes = 0;
  /// Of those, the bytes of keys whose executable was released (release_executables()): the
  /// driver keeps them (benchmark/probes/executable_memory_release.cu), so they stay held
  std::size_t executable_held_bytes = 0;
  /// Of the released keys' bytes, what the driver gave back at release_executables(
  /// executable_memory::give_back) (cudaMemGetInfo's gain), not in executable_held_bytes
  std::size_t executable_given_back_bytes = 0;
  /// The family's capture stream (made at its first capture, kept until it is destroyed): what
  /// cudaMemGetInfo dropped by at its creation, 0 or a 2 MiB piece of the driver's (a stream
  /// takes about 0.4 MiB: benchmark/probes/budget_drop.cu); in no row
  std::size_t stream_bytes = 0;
  double bytes_per_node = 0; ///< the process-wide measured ratio (before any measure: 2176)

  /// Device bytes the family holds: the pool's device bytes, its stream's and the executables'
  /// (less what the driver gave back). The rows' pool_device_bytes and executable_bytes add up
  /// to it with stream_bytes.
  [[nodiscard]] std::size_t total_bytes() const noexcept {
    return pool_device_bytes + stream_bytes + executable_bytes - executable_given_back_bytes;
  }
  /// What capturing these keys again in a new family would take: the rows' would_add_bytes, and
  /// the new family's stream (as much as this one's took).
  [[nodiscard]] std::size_t predicted_bytes() const noexcept {
    std::size_t bytes = stream_bytes;
    for (const ledger_row<Key>& row : rows) {
      bytes += row.would_add_bytes;
    }
    return bytes;
  }

  /// The table: a line of totals, then a row per key.
  friend std::ostream& operator<<(std::ostream& out, const family_ledger& ledger) {
    out << "ledger: " << ledger.total_bytes() << " device bytes: pool "
        << ledger.pool_reserved_bytes << " reserved (" << ledger.pool_device_bytes
        << " of the device)"
        << ", " << ledger.pool_in_use_bytes << " in use, " << ledger.pool_high_water_bytes
        << " high-water; executables " << ledger.executable_bytes << " measured ("
        << ledger.executable_held_bytes << " of them released and held by the driver, "
        << ledger.executable_given_back_bytes << " given back), stream " << ledger.stream_bytes
        << ", " << static_cast<std::size_t>(ledger.bytes_per_node) << " bytes per node\n"
        << std::setw(10) << "key" << std::setw(14) << "pool bytes" << std::setw(12) << "in use"
        << std::setw(12) << "high-water" << std::setw(14) << "exec bytes" << std::setw(12)
        << "measured" << std::setw(14) << "would add"
        << "  executable\n";
    for (const ledger_row<Key>& row : ledger.rows) {
      out << std::setw(10) << detail::families::key_text(row.key) << std::setw(14)
          << row.pool_reserved_bytes << std::setw(12) << row.pool_in_use_bytes << std::setw(12)
          << row.pool_high_water_bytes << std::setw(14) << row.executable_bytes << std::setw(12)
          << row.measured_bytes << std::setw(14) << row.would_add_bytes << "  "
          << (row.executable ? "held" : "released") << '\n';
    }
    return out;
  }
};

namespace detail::families {

/// Shares `total` among the rows by executable_nodes (the remainder to the last row with
/// nodes), so that the shares add up to it; each row's would_add_bytes follows, its pool growth
/// drawn first from `room`, the free bytes the pool's allocator holds now
/// (slab_memory::allocator_room): a new family's slabs take that before the allocator reserves
/// more, and a growth it cannot hold takes what this one's took (the room keeps the rest).
template <class Key>
void spread_executable_bytes(family_ledger<Key>& ledger, std::size_t total, std::size_t room) {
  std::size_t weight = 0;
  for (const ledger_row<Key>& row : ledger.rows) {
    weight += row.executable_nodes;
  }
  std::size_t given = 0;
  ledger_row<Key>* last = nullptr;
  for (ledger_row<Key>& row : ledger.rows) {
    if (weight > 0 && row.executable_nodes > 0) {
      row.executable_bytes = static_cast<std::size_t>(
          static_cast<long double>(total) * static_cast<long double>(row.executable_nodes) /
          static_cast<long double>(weight));
      given += row.executable_bytes;
      last = &row;
    }
  }
  if (last != nullptr) {
    last->executable_bytes += total - given;
  } else if (!ledger.rows.empty()) { // no weighted node anywhere: the first row carries it
    ledger.rows.front().executable_bytes = total;
  }
  ledger.executable_bytes = total;
  for (ledger_row<Key>& row : ledger.rows) {
    std::size_t pool = 0;
    if (row.pool_reserved_bytes <= room) {
      room -= row.pool_reserved_bytes;
    } else {
      pool = std::max(row.pool_device_bytes, row.pool_reserved_bytes - room);
      room = room + pool - row.pool_reserved_bytes;
    }
    row.would_add_bytes = pool + row.executable_bytes;
    ledger.executable_held_bytes += row.executable ? 0 : row.executable_bytes;
  }
}

} // namespace detail::families
} // namespace graphcap
