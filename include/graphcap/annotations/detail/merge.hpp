// graphcap/annotations/detail/merge.hpp - from a capture's closed scopes to one annotation per
// tagged node: a node's scopes, in the order they closed (innermost first), give its values, a
// key's first value winning; the nodes under the same scopes share one list of values.
#pragma once

#include <graphcap/annotations/detail/scopes.hpp>
#include <graphcap/annotations/values.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace graphcap::detail::annotations {

/// A capture's annotated nodes: what the user gets, and what finding their ids and types needs.
template <class = void>
struct basic_annotated_nodes {
  std::vector<node_annotation> annotations;    ///< what the graph's annotations() lists
  std::vector<cudaGraphNode_t> nodes;          ///< the template node of each annotation
  std::vector<std::uint32_t> creation_indices; ///< of each node, where known
  /// The captured graph's CUPTI id where conditional bodies hold annotated nodes (their ids have
  /// another graph's id in their upper half); 0 otherwise.
  std::uint32_t graph_id = 0;
  /// Where graph_id is set: the captured graph's node count, then each conditional body's CUPTI
  /// graph id and node count, in capture order (executable_node_index numbers body nodes from
  /// them); empty bodies and 0: unknown.
  std::uint32_t own_nodes = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> bodies; ///< (body graph id, node count)

  /// Forgets the nodes (the annotations stay); keeps the capacity.
  void clear_nodes() noexcept {
    nodes.clear();
    creation_indices.clear();
  }
};
using annotated_nodes = basic_annotated_nodes<>;

/// Merges scopes into annotated nodes; keeps its scratch space between captures.
template <class = void>
class basic_scope_merge {
public:
  /// Replaces `out` with one annotation per node of `scopes`' closed scopes. Their node ranges
  /// index `tagged`: the creation log when `by_creation_index` (the list then comes out in
  /// creation order, with creation indices), the walk's tagged nodes otherwise (by handle).
  /// Throws std::bad_alloc.
  void merge(const capture_scopes& scopes, std::span<const cudaGraphNode_t> tagged,
             bool by_creation_index, annotated_nodes& out) {
    if (by_creation_index && merge_disjoint(scopes, tagged, out)) {
      return;
    }
    membership_.clear();
    for (std::uint32_t position = 0; position < scopes.closed.size(); ++position) {
      const scope_record& record = scopes.closed_at(position);
      for (std::uint32_t n = record.nodes_begin; n < record.nodes_end; ++n) {
        membership_.emplace_back(
            by_creation_index ? n : reinterpret_cast<std::uintptr_t>(tagged[n]), position);
      }
    }
    std::sort(membership_.begin(), membership_.end()); // by node, then innermost scope first
    std::vector<node_annotation> list;
    out.clear_nodes();
    std::vector<annotation_values> of_scope(scopes.closed.size());
    std::map<std::vector<std::uint32_t>, annotation_values> of_chain; // nodes in nested scopes
    recent_values recent;
    std::vector<std::uint32_t> chain;
    for (std::size_t i = 0; i < membership_.size();) {
      const std::uint64_t node = membership_[i].first;
      chain.clear();
      for (; i < membership_.size() && membership_[i].first == node; ++i) {
        chain.push_back(membership_[i].second);
      }
      annotation_values* values = nullptr;
      if (chain.size() == 1) {
        values = &of_scope[chain.front()];
        if (values->empty()) {
          *values = values_of_scope(scopes, chain.front(), recent);
        }
      } else {
        values = &of_chain[chain];
        if (values->empty()) {
          *values = annotation_values{scopes.entries_of(chain)};
        }
      }
      list.emplace_back().values = *values;
      if (by_creation_index) {
        out.nodes.push_back(tagged[node]);
        out.creation_indices.push_back(static_cast<std::uint32_t>(node));
      } else {
        out.nodes.push_back(reinterpret_cast<cudaGraphNode_t>(node)); // NOLINT: the key was one
      }
    }
    out.annotations = std::move(list);
  }

private:
  /// The last few distinct values lists made, by the position (of closed) of a scope that gave
  /// them.
  using recent_values = std::vector<std::pair<std::uint32_t, annotation_values>>;

  /// merge for logged scopes that never overlap (each closed before the next opened: the usual
  /// run of regions), without sorting: each one's nodes are a run of the log, and the runs come
  /// in creation order. False, having done nothing, if any two overlap.
  static bool merge_disjoint(const capture_scopes& scopes, std::span<const cudaGraphNode_t> log,
                             annotated_nodes& out) {
    std::uint32_t covered = 0;
    std::size_t tagged = 0;
    for (const std::uint32_t index : scopes.closed) {
      const scope_record& record = scopes.records[index];
      if (record.nodes_begin < covered) {
        return false;
      }
      covered = record.nodes_end;
      tagged += record.nodes_end - record.nodes_begin;
    }
    std::vector<node_annotation> list;
    list.reserve(tagged);
    out.clear_nodes();
    out.nodes.reserve(tagged);
    out.creation_indices.reserve(tagged);
    recent_values recent;
    for (std::uint32_t position = 0; position < scopes.closed.size(); ++position) {
      const scope_record& record = scopes.closed_at(position);
      if (record.nodes_begin == record.nodes_end) {
        continue;
      }
      const annotation_values values = values_of_scope(scopes, position, recent);
      for (std::uint32_t n = record.nodes_begin; n < record.nodes_end; ++n) {
        list.emplace_back().values = values;
        out.nodes.push_back(log[n]);
        out.creation_indices.push_back(n);
      }
    }
    out.annotations = std::move(list);
    return true;
  }

  /// The values of the closed scope at `position`. Scopes often repeat their key/values (a name
  /// per layer): the last few distinct lists are reused, compared by content.
  static annotation_values values_of_scope(const capture_scopes& scopes, std::uint32_t position,
                                           recent_values& recent) {
    constexpr std::size_t remembered = 8;
    for (const auto& [other_position, values] : recent) {
      if (scopes.same_entries(position, other_position)) {
        return values;
      }
    }
    const std::array<std::uint32_t, 1> alone{position};
    annotation_values values{scopes.entries_of(alone)};
    if (recent.size() == remembered) {
      recent.erase(recent.begin());
    }
    recent.emplace_back(position, values);
    return values;
  }

  std::vector<std::pair<std::uint64_t, std::uint32_t>> membership_; // (node key, closed position)
};
using scope_merge = basic_scope_merge<>;

} // namespace graphcap::detail::annotations
