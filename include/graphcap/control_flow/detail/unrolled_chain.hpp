// graphcap/control_flow/detail/unrolled_chain.hpp - the unrolled executables of replay_loop: k
// copies of a graph's template chained one after the other in one graph, either as child-graph
// nodes (one node per copy, CUDA clones the template into each) or flat (the template's nodes
// copied node by node, by type, with its edges, so that the chain holds the nodes themselves).
//
// The flat copy covers the node types a capture makes and CUDA lets a graph hold twice: kernel
// (with its launch attributes), memset, memcpy, host, empty, event record and wait, and child
// graph nodes. Any other type (memory nodes, conditional nodes, external semaphores, batched
// memory operations) is named by flat_refusal(), and the caller chains child graphs instead, or
// replays.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/cuda/node_type.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::control_flow {

/// A template's nodes and edges, read once, for copying it node by node.
struct body_nodes {
  std::vector<cudaGraphNode_t> nodes; // as cudaGraphGetNodes lists them
  std::vector<cudaGraphNodeType> types;
  std::vector<std::size_t> from; // the edges, as indices into nodes
  std::vector<std::size_t> to;
  std::vector<cudaGraphEdgeData> data;
  std::vector<std::size_t> roots; // nodes without incoming edges
  std::vector<std::size_t> sinks; // nodes without outgoing edges
};

/// Whether a node of this type can be copied node by node (cuda/detail/node_kinds.hpp).
[[nodiscard]] constexpr bool flat_copyable(cudaGraphNodeType type) noexcept {
  return kind_of(type).flat_copy;
}

/// Reads `graph`'s nodes and edges into `body`; cuda_error if CUDA cannot list them.
template <class = void>
void read_body(cudaGraph_t graph, body_nodes& body) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  body.nodes.assign(count, nullptr);
  check(cudaGraphGetNodes(graph, body.nodes.data(), &count), "cudaGraphGetNodes");
  body.nodes.resize(count);
  body.types.assign(count, cudaGraphNodeTypeEmpty);
  for (std::size_t i = 0; i < count; ++i) {
    body.types[i] = node_type_of(body.nodes[i]);
  }
  std::size_t edges = 0;
  check(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges), "cudaGraphGetEdges");
  std::vector<cudaGraphNode_t> from(edges);
  std::vector<cudaGraphNode_t> to(edges);
  body.data.assign(edges, cudaGraphEdgeData{});
  check(cudaGraphGetEdges(graph, from.data(), to.data(), body.data.data(), &edges),
        "cudaGraphGetEdges");
  body.data.resize(edges);
  // Node -> index, by a sorted copy (a template has thousands of nodes at most).
  std::vector<std::pair<cudaGraphNode_t, std::size_t>> index(count);
  for (std::size_t i = 0; i < count; ++i) {
    index[i] = {body.nodes[i], i};
  }
  std::sort(index.begin(), index.end());
  const auto index_of = [&](cudaGraphNode_t node) {
    const auto found = std::lower_bound(index.begin(), index.end(), node,
                                        [](const std::pair<cudaGraphNode_t, std::size_t>& entry,
                                           cudaGraphNode_t key) { return entry.first < key; });
    if (found == index.end() || found->first != node) {
      throw_error(cudaErrorInvalidValue, "cudaGraphGetEdges",
                  "an edge names a node cudaGraphGetNodes did not list");
    }
    return found->second;
  };
  std::vector<bool> has_in(count, false);
  std::vector<bool> has_out(count, false);
  body.from.resize(edges);
  body.to.resize(edges);
  for (std::size_t e = 0; e < edges; ++e) {
    body.from[e] = index_of(from[e]);
    body.to[e] = index_of(to[e]);
    has_out[body.from[e]] = true;
    has_in[body.to[e]] = true;
  }
  body.roots.clear();
  body.sinks.clear();
  for (std::size_t i = 0; i < count; ++i) {
    if (!has_in[i]) {
      body.roots.push_back(i);
    }
    if (!has_out[i]) {
      body.sinks.push_back(i);
    }
  }
}

/// "" when every node of `body` can be copied node by node; else which node type cannot.
template <class = void>
[[nodiscard]] std::string flat_refusal(const body_nodes& body) {
  for (const cudaGraphNodeType type : body.types) {
    if (!flat_copyable(type)) {
      return std::string{"the graph holds a "}
          .append(graphcap::to_string(type))
          .append(" node, which the flat form does not copy");
    }
  }
  return {};
}

/// Adds to `chain`, without dependencies, a copy of `node` (of type `type`); returns it.
template <class = void>
cudaGraphNode_t copy_node(cudaGraph_t chain, cudaGraphNode_t node, cudaGraphNodeType type) {
  cudaGraphNode_t copy = nullptr;
  switch (type) {
  case cudaGraphNodeTypeKernel: {
    cudaKernelNodeParams params{};
    check(cudaGraphKernelNodeGetParams(node, &params), "cudaGraphKernelNodeGetParams");
    check(cudaGraphAddKernelNode(&copy, chain, nullptr, 0, &params), "cudaGraphAddKernelNode");
    check(cudaGraphKernelNodeCopyAttributes(copy, node), "cudaGraphKernelNodeCopyAttributes");
    return copy;
  }
  case cudaGraphNodeTypeMemset: {
    cudaMemsetParams params{};
    check(cudaGraphMemsetNodeGetParams(node, &params), "cudaGraphMemsetNodeGetParams");
    check(cudaGraphAddMemsetNode(&copy, chain, nullptr, 0, &params), "cudaGraphAddMemsetNode");
    return copy;
  }
  case cudaGraphNodeTypeMemcpy: {
    cudaMemcpy3DParms params{};
    check(cudaGraphMemcpyNodeGetParams(node, &params), "cudaGraphMemcpyNodeGetParams");
    check(cudaGraphAddMemcpyNode(&copy, chain, nullptr, 0, &params), "cudaGraphAddMemcpyNode");
    return copy;
  }
  case cudaGraphNodeTypeHost: {
    cudaHostNodeParams params{};
    check(cudaGraphHostNodeGetParams(node, &params), "cudaGraphHostNodeGetParams");
    check(cudaGraphAddHostNode(&copy, chain, nullptr, 0, &params), "cudaGraphAddHostNode");
    return copy;
  }
  case cudaGraphNodeTypeEventRecord: {
    cudaEvent_t event = nullptr;
    check(cudaGraphEventRecordNodeGetEvent(node, &event), "cudaGraphEventRecordNodeGetEvent");
    check(cudaGraphAddEventRecordNode(&copy, chain, nullptr, 0, event),
          "cudaGraphAddEventRecordNode");
    return copy;
  }
  case cudaGraphNodeTypeWaitEvent: {
    cudaEvent_t event = nullptr;
    check(cudaGraphEventWaitNodeGetEvent(node, &event), "cudaGraphEventWaitNodeGetEvent");
    check(cudaGraphAddEventWaitNode(&copy, chain, nullptr, 0, event), "cudaGraphAddEventWaitNode");
    return copy;
  }
  case cudaGraphNodeTypeGraph: {
    cudaGraph_t child = nullptr;
    check(cudaGraphChildGraphNodeGetGraph(node, &child), "cudaGraphChildGraphNodeGetGraph");
    check(cudaGraphAddChildGraphNode(&copy, chain, nullptr, 0, child),
          "cudaGraphAddChildGraphNode");
    return copy;
  }
  case cudaGraphNodeTypeEmpty:
    check(cudaGraphAddEmptyNode(&copy, chain, nullptr, 0), "cudaGraphAddEmptyNode");
    return copy;
  default: // flat_refusal() keeps every other type out
    throw_error(cudaErrorNotSupported, "graphcap::replay_loop",
                std::string{"a "}
                    .append(graphcap::to_string(type))
                    .append(" node cannot be copied node by node"));
  }
}

/// Where one copy ends: the nodes the next copy waits for (the copy's sinks, or the join node
/// that stands for them).
using copy_ends = std::vector<cudaGraphNode_t>;

/// Makes the next copy's roots wait for `previous` (nothing for the first copy). Over 16 edges
/// (many sinks times many roots), one empty node joins the sinks first.
template <class = void>
void link(cudaGraph_t chain, copy_ends previous, const std::vector<cudaGraphNode_t>& roots) {
  if (previous.empty() || roots.empty()) {
    return;
  }
  if (previous.size() > 1 && roots.size() > 1 && previous.size() * roots.size() > 16) {
    cudaGraphNode_t join = nullptr;
    check(cudaGraphAddEmptyNode(&join, chain, previous.data(), previous.size()),
          "cudaGraphAddEmptyNode");
    previous.assign(1, join);
  }
  std::vector<cudaGraphNode_t> from;
  std::vector<cudaGraphNode_t> to;
  for (cudaGraphNode_t root : roots) {
    for (cudaGraphNode_t end : previous) {
      from.push_back(end);
      to.push_back(root);
    }
  }
  check(cudaGraphAddDependencies(chain, from.data(), to.data(), nullptr, from.size()),
        "cudaGraphAddDependencies");
}

/// Appends `copies` flat copies of `body` to the empty graph `chain`, each after the previous.
template <class = void>
void chain_flat(cudaGraph_t chain, const body_nodes& body, std::size_t copies) {
  const std::size_t count = body.nodes.size();
  std::vector<cudaGraphNode_t> made(count);
  copy_ends previous;
  for (std::size_t c = 0; c < copies; ++c) {
    for (std::size_t i = 0; i < count; ++i) {
      made[i] = copy_node(chain, body.nodes[i], body.types[i]);
    }
    if (!body.from.empty()) {
      std::vector<cudaGraphNode_t> from(body.from.size());
      std::vector<cudaGraphNode_t> to(body.to.size());
      for (std::size_t e = 0; e < body.from.size(); ++e) {
        from[e] = made[body.from[e]];
        to[e] = made[body.to[e]];
      }
      check(cudaGraphAddDependencies(chain, from.data(), to.data(), body.data.data(), from.size()),
            "cudaGraphAddDependencies");
    }
    std::vector<cudaGraphNode_t> roots;
    for (const std::size_t root : body.roots) {
      roots.push_back(made[root]);
    }
    link(chain, std::move(previous), roots);
    previous.clear();
    for (const std::size_t sink : body.sinks) {
      previous.push_back(made[sink]);
    }
  }
}

/// Appends `copies` child-graph nodes of `body` to the empty graph `chain`, in a line. Returns
/// cudaErrorNotSupported, with nothing thrown, where CUDA takes no such child graph
/// (conditional or memory nodes); throws cuda_error for any other failure.
template <class = void>
[[nodiscard]] cudaError_t chain_children(cudaGraph_t chain, cudaGraph_t body, std::size_t copies) {
  cudaGraphNode_t previous = nullptr;
  for (std::size_t i = 0; i < copies; ++i) {
    cudaGraphNode_t node = nullptr;
    const cudaError_t added = cudaGraphAddChildGraphNode(
        &node, chain, previous != nullptr ? &previous : nullptr, previous != nullptr ? 1 : 0, body);
    if (added == cudaErrorNotSupported) {
      static_cast<void>(cudaGetLastError());
      return added;
    }
    check(added, "cudaGraphAddChildGraphNode");
    previous = node;
  }
  return cudaSuccess;
}

/// Instantiates `chain` (flags 0, as the graph's own executable without memory nodes).
template <class = void>
[[nodiscard]] exec_handle instantiate_chain(cudaGraph_t chain) {
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiateWithFlags(&exec, chain, 0), "cudaGraphInstantiateWithFlags");
  return exec_handle{exec};
}

} // namespace graphcap::detail::control_flow
