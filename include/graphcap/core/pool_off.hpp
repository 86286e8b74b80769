// graphcap/core/pool_none.hpp - pool::none, the lean Pool policy: no allocation during a
// capture, and no cost.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>

namespace graphcap::pool {

/// No memory is allocated during capture: the graph reads and writes buffers you allocated
/// beforehand. Costs nothing; `allocate` and `pool()` do not exist on such a graph.
struct none : policy_base<policy_kind::pool> {
  /// scope::allocate() does not exist.
  static constexpr bool can_allocate = false;
  /// pool() does not exist.
  static constexpr bool has_handle = false;
  /// No instantiation flag.
  static constexpr unsigned long long instantiate_flags = 0;
};

} // namespace graphcap::pool
