// graphcap/cuda/detail/graph_layout.hpp - what a picture of a graph needs beyond what CUDA 13.0 can
// tell of it: the annotation scopes (their names, their nodes, so their nesting) and the
// conditional nodes' bodies (CUDA 13.0 has no cudaGraphNodeGetParams to list them). annot::on
// fills it during a capture; write_dot (<graphcap/dot.hpp>) reads it. Plain data, no CUDA call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail {

/// The scopes and conditional bodies of one capture. Node and graph handles are the template's:
/// valid while the graph keeps it (keep_graph) and until the next capture.
struct graph_layout {
  /// A conditional node and its bodies, as control flow made them.
  struct conditional {
    cudaGraphNode_t node = nullptr;
    std::string construct; // "while_", "if_else", ...
    std::vector<cudaGraph_t> bodies;
  };

  /// The closed scopes, in the order they closed (an inner scope closes before its outer one):
  /// each one's name and its nodes, a range of members.
  std::vector<std::string> scope_names;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> scope_ranges;
  std::vector<cudaGraphNode_t> members;
  std::vector<conditional> conditionals;

  /// Adds a closed scope. Throws std::bad_alloc.
  void add_scope(std::string name, std::span<const cudaGraphNode_t> nodes) {
    const auto begin = static_cast<std::uint32_t>(members.size());
    members.insert(members.end(), nodes.begin(), nodes.end());
    scope_ranges.emplace_back(begin, static_cast<std::uint32_t>(members.size()));
    scope_names.push_back(std::move(name));
  }

  /// The nodes of scope `index` (its closing position).
  [[nodiscard]] std::span<const cudaGraphNode_t> nodes_of(std::size_t index) const noexcept {
    return {members.data() + scope_ranges[index].first,
            members.data() + scope_ranges[index].second};
  }

  /// Forgets everything; keeps the capacity.
  void clear() noexcept {
    scope_names.clear();
    scope_ranges.clear();
    members.clear();
    conditionals.clear();
  }
};

} // namespace graphcap::detail
