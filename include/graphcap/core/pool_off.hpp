// graphcap/core/pool_off.hpp - pool::off, the lean Pool policy: no allocation during a
// capture, and no cost. (Spelled pool::none before 0.3: that name stays, deprecated, for one
// release; every other policy kind says off.)
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>

namespace graphcap::pool {

/// No memory is allocated during capture: the graph reads and writes buffers you allocated
/// beforehand. Costs nothing; `allocate` and `pool()` do not exist on such a graph.
struct off : policy_base<policy_kind::pool> {
  /// scope::allocate() does not exist.
  static constexpr bool can_allocate = false;
  /// pool() does not exist.
  static constexpr bool has_handle = false;
  /// No instantiation flag.
  static constexpr unsigned long long instantiate_flags = 0;
};

/// The 0.2 spelling of pool::off.
using none [[deprecated("graphcap: pool::none is spelled pool::off since 0.3")]] = off;

} // namespace graphcap::pool
