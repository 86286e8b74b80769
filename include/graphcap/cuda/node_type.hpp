// graphcap/cuda/node_type.hpp - to_string(cudaGraphNodeType): the short names that
// annotations' JSON and traces give node types (cuda/detail/node_kinds.hpp's table).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/detail/node_kinds.hpp>

#include <cuda_runtime_api.h>

#include <string_view>

namespace graphcap {

/// A node type's short name ("kernel", "memcpy", "event_record", ...; "unknown" for a type
/// the runtime cannot name).
[[nodiscard]] constexpr std::string_view to_string(cudaGraphNodeType type) noexcept {
  return detail::kind_of(type).name;
}

} // namespace graphcap
