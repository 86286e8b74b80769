// graphcap/pool/pool_statistics.hpp - what a graph's pool holds: graph.pool_statistics(),
// pool_handle::statistics().
#pragma once

#include <graphcap/config.hpp>

#include <cstddef>
#include <iosfwd>

namespace graphcap {

/// What a pool holds, for introspection and tests. "In use" is from the pool's side: a block
/// handed out to a graph (or held by a buffer) and not yet given back to the pool. A block
/// deallocate()d during a capture stays in use until its graph's reset (pool::private_pool,
/// pool::user, pool::sleepable: the graph's replays still use it, and later allocations of the
/// same capture may reuse it); a pool::shared graph gives it back when the capture ends.
struct pool_statistics {
  std::size_t reserved_bytes = 0; ///< device memory held in slabs
  /// What the device's free memory (cudaMemGetInfo) dropped by at the slabs' allocations: the
  /// slabs, what the allocator reserved beyond them (a stream-ordered pool's 32 MiB, or 0
  /// where its reserve had room) and the pool's own stream, made at its first slab (0 or a
  /// 2 MiB piece of the driver's); less each freed slab's size, 0 with no slab. Other code's
  /// allocations at the same moment count too.
  std::size_t device_bytes = 0;
  std::size_t in_use_bytes = 0;  ///< bytes of the blocks in use (see above)
  std::size_t slabs = 0;         ///< slabs held
  std::size_t blocks_in_use = 0; ///< blocks in use (see above)
  /// The most bytes in use at once since the pool was made (or since a graph_family's capture of
  /// one key began: it starts the figure again for its ledger)
  std::size_t high_water_bytes = 0;

  /// One line: "pool: R bytes reserved in S slabs, U bytes in use in B blocks". A template of
  /// the stream, so that this header needs only <iosfwd>: include <ostream> to use it.
  template <class Char, class Traits>
  friend std::basic_ostream<Char, Traits>& operator<<(std::basic_ostream<Char, Traits>& out,
                                                      const pool_statistics& statistics) {
    out << "pool: " << statistics.reserved_bytes << " bytes reserved in " << statistics.slabs
        << (statistics.slabs == 1 ? " slab, " : " slabs, ") << statistics.in_use_bytes
        << " bytes in use in " << statistics.blocks_in_use
        << (statistics.blocks_in_use == 1 ? " block" : " blocks");
    return out;
  }
};

} // namespace graphcap
