// graphcap/piecewise/embed.hpp - composing graphs: a graphcap graph added to another capture as
// one child-graph node (<graphcap/piecewise.hpp>, docs/piecewise.md).
//
//   graphcap::graph attention{graphcap::keep_graph};    // keeps its template, for embedding
//   attention.capture(side, [&](cudaStream_t s) { ... });
//   step.capture(stream, [&](auto& cap) {
//     embed_tokens<<<..., cap.stream()>>>(...);
//     graphcap::embed(cap, attention);                   // the attention graph, as one node
//     mlp<<<..., cap.stream()>>>(...);
//   });
//
// CUDA clones the template into the capture: what the embedded graph does later (a reset, a
// recapture) does not reach the node, but the node uses the addresses the embedded graph
// captured, its pool blocks included, so the embedded graph must stay alive and captured while
// the outer graph may replay. graphcap never joins one capture to another: a capture() on a
// stream that is already capturing is refused (cudaErrorIllegalState), because the pool blocks
// of the inner graph would belong to a graph that is never replayed; embed() is the way in.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/detail/capture_point.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace graphcap {
namespace detail::piecewise {

/// The rule CUDA sets for child graphs that `graph` breaks, or nullptr: no memory nodes and no
/// conditional nodes (cudaGraphAddChildGraphNode's documentation), looked at one level deep.
inline const char* child_graph_refusal(cudaGraph_t graph) {
  std::size_t count = 0;
  detail::check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  detail::check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  for (cudaGraphNode_t node : nodes) {
    const cudaGraphNodeType type = detail::node_type_of(node);
    if (detail::kind_of(type).graph_memory) {
      return "CUDA allows no memory node in a child graph, and this graph allocates with graph "
             "memory nodes (pool::graph_memory_nodes): capture it with a slab pool "
             "(pool::private_pool, pool::shared) to embed it";
    }
    if (type == cudaGraphNodeTypeConditional) {
      return "CUDA allows no conditional node in a child graph, and this graph holds one (if_, "
             "if_else, switch_, while_, device_loop): replay it on its own, or capture its "
             "work into the outer capture instead";
    }
  }
  return nullptr;
}

} // namespace detail::piecewise

/// Adds `graph`'s template to the capture of `cap` as one child-graph node, after the work
/// issued on cap.stream() so far; the work issued after it follows it. `graph` must keep its
/// template (graphcap::keep_graph; state_error otherwise) and stay alive and captured while the
/// outer graph may replay: CUDA clones the template into the capture, so a later reset or
/// recapture of `graph` does not reach the node, but the node uses the addresses `graph`
/// captured, its pool blocks included. capture_error naming CUDA's rule where `graph` holds
/// memory or conditional nodes, or where cap.stream() is not capturing. (A capture() on a stream
/// that is already capturing is refused: embed() is how one graph goes into another.)
template <class Scope, class Graph>
void embed(Scope& cap, const Graph& graph) {
  const cudaGraph_t child = graph.raw_graph(); // state_error without a kept template
  if (const char* refusal = detail::piecewise::child_graph_refusal(child)) {
    detail::throw_error<capture_error>(cudaErrorNotSupported, "graphcap::embed()", refusal);
  }
  const detail::capture_point point = detail::capture_point_of(cap.stream(), "embed()");
  cudaGraphNode_t node = nullptr;
  detail::check_in_capture(
      cudaGraphAddChildGraphNode(&node, point.graph, point.dependencies, point.count, child),
      "cudaGraphAddChildGraphNode");
  detail::check_in_capture(cudaStreamUpdateCaptureDependencies(cap.stream(), &node, nullptr, 1,
                                                               cudaStreamSetCaptureDependencies),
                           "cudaStreamUpdateCaptureDependencies");
}

} // namespace graphcap
