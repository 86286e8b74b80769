// graphcap/annotations/detail/layout.hpp - annot::on's record of a capture's scopes for pictures
// (graph_layout): each closed scope's name and nodes, taken before the scopes are released.
#pragma once

#include <graphcap/annotations/detail/scopes.hpp>
#include <graphcap/cuda/detail/graph_layout.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>

namespace graphcap::detail::annotations {

/// A scope's name in a picture: its "name" value, else its pairs as "key=value, ...".
template <class = void>
std::string scope_title(const capture_scopes& scopes, const scope_record& record) {
  std::string pairs;
  for (std::uint32_t e = record.entries_begin; e < record.entries_end; ++e) {
    if (scopes.entries[e].first == "name") {
      return scopes.entries[e].second;
    }
    pairs += pairs.empty() ? "" : ", ";
    pairs += scopes.entries[e].first + "=" + scopes.entries[e].second;
  }
  return pairs;
}

/// Replaces `layout`'s scopes with `scopes`' closed ones, in closing order; their node ranges
/// index `tagged` (the creation log or the walk's tagged nodes). Keeps its conditionals.
/// Throws std::bad_alloc.
template <class = void>
void record_scope_layout(const capture_scopes& scopes, std::span<const cudaGraphNode_t> tagged,
                         graph_layout& layout) {
  layout.scope_names.clear();
  layout.scope_ranges.clear();
  layout.members.clear();
  for (std::uint32_t position = 0; position < scopes.closed.size(); ++position) {
    const scope_record& record = scopes.closed_at(position);
    const std::span<const cudaGraphNode_t> nodes =
        record.nodes_end > record.nodes_begin && record.nodes_end <= tagged.size()
            ? tagged.subspan(record.nodes_begin, record.nodes_end - record.nodes_begin)
            : std::span<const cudaGraphNode_t>{};
    layout.add_scope(scope_title(scopes, record), nodes);
  }
}

} // namespace graphcap::detail::annotations
