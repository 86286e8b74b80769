// graphcap/rebind/detail/switches.hpp - what set_enabled() and tag_nodes() do: the nodes a
// capture holds, a scope's nodes, and cudaGraphNodeSetEnabled over a set of nodes, checked first
// and undone on a failure midway.
#pragma once

#include <graphcap/cuda/detail/capture_point.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/graph_layout.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>
#include <graphcap/cuda/node_type.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/rebind/rebind_error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphcap::detail::rebind {

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_foreign_tag() {
  throw state_error("graphcap::set_enabled: the node_tag belongs to another graph, or to an "
                    "earlier capture of this one (a recapture or reset() drops its nodes); take "
                    "it again with tag_nodes() in the new capture");
}

/// The capture's graph that `stream` is capturing into (a body's graph for a body stream), and
/// its nodes now, sorted. Throws state_error when the stream is not capturing.
template <class = void>
std::pair<cudaGraph_t, std::vector<cudaGraphNode_t>> capture_nodes(cudaStream_t stream) {
  const std::optional<capture_point> point = active_capture_point(stream);
  if (!point) [[unlikely]] {
    throw state_error("graphcap::tag_nodes: the stream is not capturing; tag nodes inside a "
                      "capture, on its stream (cap.stream()) or a conditional body's");
  }
  const cudaGraph_t graph = point->graph;
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  nodes.resize(count);
  std::sort(nodes.begin(), nodes.end());
  return {graph, std::move(nodes)};
}

/// The nodes of `after` not in `before` (both sorted).
template <class = void>
std::vector<cudaGraphNode_t> added_nodes(const std::vector<cudaGraphNode_t>& before,
                                         std::vector<cudaGraphNode_t> after) {
  std::vector<cudaGraphNode_t> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  return added;
}

/// The executable of `graph`; state_error unless it has one, and keeps the template whose node
/// handles name its nodes.
template <class Graph>
cudaGraphExec_t executable_of(const Graph& graph) {
  if (graph.state() != graph_state::instantiated || !graph.keeps_graph()) [[unlikely]] {
    throw state_error(std::string{"graphcap::set_enabled: the graph is "} +
                      std::string{graphcap::to_string(graph.state())} +
                      (graph.keeps_graph() ? "" : " and keeps no template") +
                      ": nodes are turned on and off in an instantiated graph constructed with "
                      "graphcap::keep_graph (its template's nodes name the executable's)");
  }
  return graph.raw_exec();
}

/// The nodes of every scope named `scope`, without repeats.
template <class = void>
std::vector<cudaGraphNode_t> scope_nodes(const graph_layout& layout, std::string_view scope) {
  std::vector<cudaGraphNode_t> nodes;
  bool found = false;
  for (std::size_t index = 0; index < layout.scope_names.size(); ++index) {
    if (layout.scope_names[index] == scope) {
      found = true;
      const std::span<const cudaGraphNode_t> members = layout.nodes_of(index);
      nodes.insert(nodes.end(), members.begin(), members.end());
    }
  }
  if (!found) [[unlikely]] {
    throw rebind_error("graphcap::set_enabled: the last capture has no annotation scope named '" +
                       std::string{scope} + "' (" + std::to_string(layout.scope_names.size()) +
                       " scopes closed in it)");
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

/// Refuses (rebind_error, naming it) a node CUDA cannot turn off: only kernel, memset and memcpy
/// nodes can be.
template <class = void>
void check_switchable(std::span<const cudaGraphNode_t> nodes, const std::string& what) {
  for (cudaGraphNode_t node : nodes) {
    const cudaGraphNodeType type = node_type_of(node);
    if (!kind_of(type).can_disable) [[unlikely]] {
      throw rebind_error("graphcap::set_enabled: " + what + " holds a " +
                         std::string{graphcap::to_string(type)} +
                         " node; CUDA turns only kernel, memset and memcpy nodes on and off "
                         "(cudaGraphNodeSetEnabled). Nothing was changed");
    }
  }
}

/// Whether `exec` knows the template's nodes: after a recapture that updated it in place it
/// knows none (CUDA names an executable's nodes by the graph it was instantiated from).
template <class = void>
bool names_nodes(cudaGraphExec_t exec, std::span<const cudaGraphNode_t> nodes) {
  if (nodes.empty()) {
    return true;
  }
  unsigned int on = 0;
  const cudaError_t status = cudaGraphNodeGetEnabled(exec, nodes.front(), &on);
  if (status == cudaErrorInvalidValue) {
    static_cast<void>(cudaGetLastError());
    return false;
  }
  check(status, "cudaGraphNodeGetEnabled");
  return true;
}

/// cudaGraphNodeSetEnabled on each of `nodes` (switchable: check_switchable), each one's state
/// read first, and on a failure midway the changed ones set back.
template <class = void>
void switch_nodes(cudaGraphExec_t exec, std::span<const cudaGraphNode_t> nodes, bool enabled) {
  std::vector<unsigned int> was(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    check(cudaGraphNodeGetEnabled(exec, nodes[i], &was[i]), "cudaGraphNodeGetEnabled");
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const cudaError_t status = cudaGraphNodeSetEnabled(exec, nodes[i], enabled ? 1U : 0U);
    if (status != cudaSuccess) [[unlikely]] {
      while (i-- > 0) {
        ignore(cudaGraphNodeSetEnabled(exec, nodes[i], was[i]));
      }
      throw_cuda(status, "cudaGraphNodeSetEnabled",
                 "nothing was changed: the nodes switched before the failure were set back");
    }
  }
}

/// Checks `nodes`, makes sure the graph's executable knows them (instantiating it anew from the
/// kept template where a recapture updated it in place), and switches them.
template <class Graph>
void set_nodes_enabled(Graph& graph, std::span<const cudaGraphNode_t> nodes, bool enabled,
                       const std::string& what) {
  cudaGraphExec_t exec = executable_of(graph);
  check_switchable(nodes, what);
  if (!names_nodes(exec, nodes)) {
    graph.instantiate();
    exec = graph.raw_exec();
  }
  switch_nodes(exec, nodes, enabled);
}

/// Whether each of `nodes` is on.
template <class = void>
bool all_enabled(cudaGraphExec_t exec, std::span<const cudaGraphNode_t> nodes) {
  for (cudaGraphNode_t node : nodes) {
    unsigned int on = 0;
    check(cudaGraphNodeGetEnabled(exec, node, &on), "cudaGraphNodeGetEnabled");
    if (on == 0) {
      return false;
    }
  }
  return true;
}

} // namespace graphcap::detail::rebind
