// graphcap/families/detail/topology.hpp - a captured template's topology signature: what
// graph_family's one-executable mode groups keys by, so that keys whose templates CUDA can
// update into one another share one executable graph.
//
// cudaGraphExecUpdate pairs the nodes of two graphs by creation order and refuses another node
// count, another node type at a place, or other dependencies (CUDA's update rules;
// test/double/src/exec.cpp models them). The signature hashes exactly those: the node count, each
// node's type in creation order, and the edges as pairs of creation indexes. Equal signatures
// make an update likely, not certain (a copy between other kinds of memory, a 2D memset of
// another shape, a collision): the family tries the update, and a refusal gives the key an
// executable of its own.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace graphcap::detail::families {

/// What one-executable mode compares: equal signatures share an executable where CUDA agrees.
struct topology_signature {
  std::size_t nodes = 0;  ///< the template's node count
  std::uint64_t hash = 0; ///< FNV-1a over the node types and the edges, by creation index

  friend bool operator==(const topology_signature&, const topology_signature&) = default;
};

/// FNV-1a, one 64-bit word at a time.
class signature_hash {
public:
  void add(std::uint64_t word) noexcept {
    for (int byte = 0; byte < 8; ++byte) {
      value_ = (value_ ^ ((word >> (8 * byte)) & 0xffU)) * 0x100000001b3ULL;
    }
  }
  [[nodiscard]] std::uint64_t value() const noexcept { return value_; }

private:
  std::uint64_t value_ = 0xcbf29ce484222325ULL;
};

/// The signature of `graph` (a finished capture's template). Throws cuda_error if CUDA cannot
/// list its nodes or edges.
inline topology_signature signature_of(cudaGraph_t graph) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) {
    check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  }
  signature_hash hash;
  hash.add(count);
  std::vector<std::pair<cudaGraphNode_t, std::size_t>> index_of; // sorted by handle
  index_of.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    cudaGraphNodeType type{};
    check(cudaGraphNodeGetType(nodes[i], &type), "cudaGraphNodeGetType");
    hash.add(static_cast<std::uint64_t>(type));
    index_of.emplace_back(nodes[i], i);
  }
  std::sort(index_of.begin(), index_of.end());
  const auto index = [&index_of](cudaGraphNode_t node) -> std::uint64_t {
    const auto found = std::lower_bound(index_of.begin(), index_of.end(),
                                        std::pair<cudaGraphNode_t, std::size_t>{node, 0});
    return found != index_of.end() && found->first == node ? found->second : ~std::uint64_t{0};
  };
  std::size_t edge_count = 0;
  check(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count), "cudaGraphGetEdges");
  std::vector<cudaGraphNode_t> from(edge_count);
  std::vector<cudaGraphNode_t> to(edge_count);
  std::vector<cudaGraphEdgeData> data(edge_count); // asked for: without it, typed edges fail
  if (edge_count > 0) {
    check(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &edge_count),
          "cudaGraphGetEdges");
  }
  struct edge {
    std::uint64_t source, target, kind;
  };
  std::vector<edge> edges; // CUDA lists edges in no set order
  edges.reserve(edge_count);
  for (std::size_t e = 0; e < edge_count; ++e) {
    const std::uint64_t kind = data[e].type | (std::uint64_t{data[e].from_port} << 8U) |
                               (std::uint64_t{data[e].to_port} << 16U);
    edges.push_back({index(from[e]), index(to[e]), kind});
  }
  std::sort(edges.begin(), edges.end(), [](const edge& a, const edge& b) {
    return std::tie(a.source, a.target, a.kind) < std::tie(b.source, b.target, b.kind);
  });
  hash.add(edge_count);
  for (const edge& e : edges) {
    hash.add(e.source);
    hash.add(e.target);
    hash.add(e.kind);
  }
  return {count, hash.value()};
}

} // namespace graphcap::detail::families
