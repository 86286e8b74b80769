// graphcap/cuda/node_id_source.hpp - graphcap::node_id_source, where annotated nodes get their
// ids from (CUPTI, the driver's tools id, or none).
#pragma once

#include <graphcap/config.hpp>

#include <cstdint>

namespace graphcap {

/// Where annotated nodes get their ids from.
enum class node_id_source : std::uint8_t {
  cupti,    ///< CUPTI (cuptiGetGraphNodeId); traces can be recorded
  tools_id, ///< the driver's tools id (CUDA 13.1+ drivers, when CUPTI is held by another tool)
  none,     ///< no ids: scopes are still recorded by node
};

} // namespace graphcap
