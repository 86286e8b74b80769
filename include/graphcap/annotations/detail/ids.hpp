// graphcap/annotations/detail/ids.hpp - the template node ids of a capture's annotated nodes, from
// their creation indices and one CUPTI call where the observed rule holds, node by node where it
// does not (cuda/detail/cupti.hpp says what is observed; docs/annotations.md, "Node ids").
#pragma once

#include <graphcap/annotations/detail/merge.hpp>
#include <graphcap/annotations/notices.hpp>
#include <graphcap/cuda/detail/cupti.hpp>
#include <graphcap/cuda/detail/graph_queries.hpp>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace graphcap::detail::annotations {

/// The index, in the numbering of an executable of `graph`, of the template node `template_id`
/// of the captured graph or of one of its conditional bodies; nullopt where it is not known.
///
/// For a body node: INFERRED from CUPTI's kernel records on the H200 (CUDA 13.0, driver 580),
/// not documented. The executable numbers the captured graph's own nodes first (0..P-1, their
/// template indices), then every body's nodes, body after body, each continuing the count: a
/// body node's index is P + the node counts of the bodies before it + its index in its body.
/// Bodies are taken in capture order (an if_else's bodies in order, a nested body right after
/// the body holding its conditional, before that body's next sibling): ASSUMED for nested
/// bodies, i.e. the executable numbers a graph's nodes, then its bodies' the same way,
/// recursively. Checked on the H200: a WHILE node alone with a body of two kernels
/// (test/control_flow/annotations_bodies.gpu.cpp; its second case, kernels before and after an
/// if_else and a while_, tells this rule from "a conditional's bodies right after the node"). If a
/// driver numbers otherwise, this is the one place to change.
template <class = void>
[[nodiscard]] std::optional<std::uint32_t>
executable_node_index(const annotated_nodes& graph, std::uint64_t template_id) noexcept {
  const auto of_graph = static_cast<std::uint32_t>(template_id >> 32U);
  const auto index = static_cast<std::uint32_t>(template_id);
  if (graph.graph_id == 0 || of_graph == graph.graph_id) {
    return index; // no body holds an annotated node, or one of the graph's own
  }
  std::uint32_t offset = graph.own_nodes;
  for (const auto& [body_id, count] : graph.bodies) {
    if (body_id == of_graph) {
      return offset + index;
    }
    offset += count;
  }
  return std::nullopt; // the bodies' sizes are unknown
}

/// The capture of `graph` has ended: records its node count into `nodes` if its bodies hold
/// annotated nodes (executable_node_index numbers them after the graph's own), then forgets the
/// template nodes (annotated_nodes::clear_nodes).
template <class = void>
void forget_template_nodes(const graph_queries& queries, cudaGraph_t graph,
                           annotated_nodes& nodes) noexcept {
  nodes.clear_nodes();
  std::size_t count = 0;
  if (nodes.bodies.empty() || !queries.nodes(graph, nullptr, count) || count == 0) {
    nodes.bodies.clear(); // unknown: the body nodes' replayed ids stay 0
    return;
  }
  nodes.own_nodes = static_cast<std::uint32_t>(count);
}

/// The capture of `graph` succeeded: each annotated node's type and (for a kernel) its name, read
/// from the template; empty nodes (joins, not work) dropped; then forget_template_nodes.
template <class = void>
void name_annotated_nodes(const graph_queries& queries, cudaGraph_t graph,
                          annotated_nodes& result) noexcept {
  std::vector<node_annotation>& list = result.annotations;
  kernel_names names{queries.driver};
  std::size_t kept = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const cudaGraphNodeType type = queries.type(result.nodes[i]);
    if (type == cudaGraphNodeTypeEmpty) {
      continue; // joins, not work: nothing to name
    }
    node_annotation& node = list[i];
    node.type = type;
    if (type == cudaGraphNodeTypeKernel) {
      node.kernel = names.of(result.nodes[i]);
    }
    if (kept != i) {
      list[kept] = std::move(node);
    }
    ++kept;
  }
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(kept), list.end());
  forget_template_nodes(queries, graph, result); // and counts the graph's nodes
}

/// Re-keys the annotations of `graph` to the ids the replays of executable `exec_id` carry (0
/// where either id is unknown): executable_node_index. True if any node has an id.
template <class = void>
bool rekey_to_executable(annotated_nodes& graph, std::uint32_t exec_id) noexcept {
  bool any = false;
  for (node_annotation& node : graph.annotations) {
    const std::optional<std::uint32_t> index = exec_id != 0 && node.template_id != 0
                                                   ? executable_node_index(graph, node.template_id)
                                                   : std::nullopt;
    node.id = index ? replayed_node_id(exec_id, *index) : 0;
    any = any || node.id != 0;
  }
  return any;
}

/// Resolves annotated nodes' template ids; keeps its scratch space between captures.
template <class = void>
class basic_template_id_resolver {
public:
  /// Gives every annotation of `nodes` its template id (and the same id, until an executable
  /// exists), then sorts them by it: creation order. `from_log`: the creation indices are known
  /// (the creation log); otherwise they come from one listing of `graph`. Returns the source the
  /// ids came from: `source`, or none where CUPTI refused (told once, ids 0). Call while the
  /// capture runs. Throws std::bad_alloc.
  node_id_source resolve(node_id_source source, bool from_log, const graph_queries& queries,
                         cudaGraph_t graph, annotated_nodes& nodes) {
    if (source == node_id_source::cupti) {
      if (from_log ? ids_from_creation_indices(nodes)
                   : ids_from_creation_order(queries, graph, nodes)) {
        if (!from_log) {
          sort_by_template_id(nodes); // logged nodes came in creation order already
        }
        return source;
      }
    }
    std::vector<node_annotation>& list = nodes.annotations;
    for (std::size_t i = 0; i < list.size(); ++i) {
      CUptiResult cupti = CUPTI_SUCCESS;
      list[i].template_id = template_node_id(source, nodes.nodes[i], cupti);
      list[i].id = list[i].template_id; // until an executable exists
      if (cupti != CUPTI_SUCCESS) {
        // CUPTI was taken by another tool after the probe: degrade this capture, say so once.
        notice_id_source(node_id_source::none, cupti);
        for (node_annotation& node : list) {
          node.template_id = 0;
          node.id = 0;
        }
        if (!from_log) {
          sort_by_creation(queries, graph, nodes);
        }
        return node_id_source::none;
      }
    }
    if (source != node_id_source::none) {
      sort_by_template_id(nodes);
    } else if (!from_log) {
      sort_by_creation(queries, graph, nodes); // no ids to sort by: the walk's list is by handle
    }
    return source;
  }

  /// Drops the scratch contents; keeps the capacity.
  void clear() noexcept {
    graph_nodes_.clear();
    creation_index_.clear();
    order_.clear();
  }

private:
  /// CUPTI's ids for every annotated node from one listing of the graph's nodes (creation order),
  /// instead of a cuptiGetGraphNodeId per node. The nodes are sorted by handle (scope_merge):
  /// joined with the graph's nodes sorted the same way. See ids_from_creation_indices.
  bool ids_from_creation_order(const graph_queries& queries, cudaGraph_t graph,
                               annotated_nodes& nodes) {
    return creation_indices_from_listing(queries, graph, nodes) && ids_from_creation_indices(nodes);
  }

  /// Without ids (CUPTI held by another tool): the walk's nodes, which come sorted by handle, put
  /// in creation order by one listing of the graph, as annotations() promises. Left as they are
  /// if CUDA refuses the listing.
  void sort_by_creation(const graph_queries& queries, cudaGraph_t graph, annotated_nodes& nodes) {
    if (!creation_indices_from_listing(queries, graph, nodes)) {
      return;
    }
    std::vector<node_annotation>& list = nodes.annotations;
    order_.resize(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      order_[i] = {nodes.creation_indices[i], i};
    }
    reorder(nodes);
  }

  /// Each annotated node's index in one listing of `graph` (creation order) into
  /// `nodes.creation_indices`. The nodes are sorted by handle (scope_merge): joined with the
  /// graph's nodes sorted the same way. False if CUDA refuses, or a node is not in the listing.
  bool creation_indices_from_listing(const graph_queries& queries, cudaGraph_t graph,
                                     annotated_nodes& nodes) {
    std::size_t count = 0;
    if (nodes.annotations.empty() || !queries.nodes(graph, nullptr, count)) {
      return false;
    }
    graph_nodes_.resize(count);
    if (!queries.nodes(graph, graph_nodes_.data(), count)) {
      return false;
    }
    creation_index_.resize(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      creation_index_[i] = {graph_nodes_[i], i};
    }
    std::sort(creation_index_.begin(), creation_index_.end());
    nodes.creation_indices.clear();
    auto next = creation_index_.begin();
    for (const cudaGraphNode_t node : nodes.nodes) {
      next = std::lower_bound(next, creation_index_.end(), std::pair{node, std::uint32_t{0}});
      if (next == creation_index_.end() || next->first != node) {
        return false;
      }
      nodes.creation_indices.push_back(next->second);
    }
    return true;
  }

  /// Every annotated node's id from its creation index (its place in the creation log, or in the
  /// graph's listing) and the graph's id, with one CUPTI call: the last node's id, whose upper
  /// half is the graph's id and whose lower half must be that node's index (the rule is
  /// observed, not documented: template_node_id_at; a different rule, or a creation log that
  /// missed a node, shows there as anywhere). False (the caller asks node by node) on a mismatch
  /// or a failure.
  static bool ids_from_creation_indices(annotated_nodes& nodes) {
    std::vector<node_annotation>& list = nodes.annotations;
    std::uint64_t last = 0;
    if (list.empty() || cuptiGetGraphNodeId(nodes.nodes.back(), &last) != CUPTI_SUCCESS) {
      return false;
    }
    const auto graph_id = static_cast<std::uint32_t>(last >> 32U);
    if (template_node_id_at(graph_id, nodes.creation_indices.back()) != last) {
      return false;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      list[i].template_id = template_node_id_at(graph_id, nodes.creation_indices[i]);
      list[i].id = list[i].template_id; // until an executable exists
    }
    return true;
  }

  /// In node creation order: by template id (the nodes follow their annotations).
  void sort_by_template_id(annotated_nodes& nodes) {
    std::vector<node_annotation>& list = nodes.annotations;
    order_.resize(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      order_[i] = {list[i].template_id, i};
    }
    reorder(nodes);
  }

  /// The annotations and their nodes in the order of the keys in order_ (sorted here).
  void reorder(annotated_nodes& nodes) {
    std::vector<node_annotation>& list = nodes.annotations;
    std::sort(order_.begin(), order_.end());
    std::vector<node_annotation> sorted_list;
    std::vector<cudaGraphNode_t> sorted_nodes;
    sorted_list.reserve(list.size());
    sorted_nodes.reserve(list.size());
    for (const auto& [id, i] : order_) {
      sorted_list.push_back(std::move(list[i]));
      sorted_nodes.push_back(nodes.nodes[i]);
    }
    list = std::move(sorted_list);
    nodes.nodes = std::move(sorted_nodes);
  }

  std::vector<cudaGraphNode_t> graph_nodes_;
  std::vector<std::pair<cudaGraphNode_t, std::uint32_t>> creation_index_; // (node, index)
  std::vector<std::pair<std::uint64_t, std::size_t>> order_;              // (sort key, index)
};
using template_id_resolver = basic_template_id_resolver<>;

} // namespace graphcap::detail::annotations
