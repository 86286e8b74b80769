// graphcap/pool/pool_statistics.hpp - what a graph's pool holds: graph.pool_statistics(),
// pool_handle::statistics().
#pragma once

#include <graphcap/config.hpp>

#include <cstddef>

namespace graphcap {

/// What a pool holds, for introspection and tests.
struct pool_statistics {
  std::size_t reserved_bytes = 0; ///< device memory held in slabs
  std::size_t in_use_bytes = 0;   ///< bytes of blocks handed out and not given back
  std::size_t slabs = 0;          ///< slabs held
  std::size_t blocks_in_use = 0;  ///< blocks handed out and not given back
};

} // namespace graphcap
