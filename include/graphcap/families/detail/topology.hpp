// graphcap/families/detail/topology.hpp - a captured template's topology signature: what
// graph_family's one-executable mode groups keys by, so that keys whose templates CUDA can
// update into one another, and whose executables then run as their own would, share one
// executable graph.
//
// cudaGraphExecUpdate pairs the nodes of two graphs by creation order and refuses another node
// count, another node type at a place, or other dependencies (CUDA's update rules;
// test/double/src/exec.cpp models them). The signature hashes exactly those: the node count, each
// node's type in creation order, and the edges as pairs of creation indexes. It hashes apart,
// as a second word, what the update does not compare but an executable keeps: each kernel node's
// function and the launch attributes of a graph node (cluster shape, cooperative launch,
// priority, memory-sync domain, ...). On the H200 (driver 580) an update to a template of
// another cluster shape succeeds and the executable keeps running its old clusters
// (benchmark/probes/exec_update_attributes.cu, docs/results/2026-12-04-h200-session17/probes):
// such keys must not share. Equal signatures make an update likely, not certain (a copy between
// other kinds of memory, a 2D memset of another shape, a collision): the family tries the
// update, and a refusal gives the key an executable of its own.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace graphcap::detail::families {

/// What one-executable mode compares: equal signatures share an executable where CUDA agrees.
struct topology_signature {
  std::size_t nodes = 0;  ///< the template's node count
  std::uint64_t hash = 0; ///< FNV-1a over the node types and the edges, by creation index
  /// FNV-1a over each kernel node's function and launch attributes (launch_attributes_compared),
  /// by creation index: what an update would not carry over
  std::uint64_t launches = 0;

  friend bool operator==(const topology_signature&, const topology_signature&) = default;
  /// True when CUDA's update would take one template into the other's executable (the launch
  /// word aside).
  [[nodiscard]] bool same_topology(const topology_signature& other) const noexcept {
    return nodes == other.nodes && hash == other.hash;
  }
};

/// The launch attributes a kernel node keeps that cudaGraphExecUpdate does not compare (or, for
/// a cooperative launch, refuses): every attribute CUDA 13.0 documents as valid for graph nodes
/// but the access-policy window (an L2 hint, by address). Probed on the H200:
/// benchmark/probes/exec_update_attributes.cu.
inline constexpr std::array<cudaLaunchAttributeID, 9> launch_attributes_compared{
    cudaLaunchAttributeCooperative,
    cudaLaunchAttributeClusterDimension,
    cudaLaunchAttributeClusterSchedulingPolicyPreference,
    cudaLaunchAttributePriority,
    cudaLaunchAttributeMemSyncDomainMap,
    cudaLaunchAttributeMemSyncDomain,
    cudaLaunchAttributePreferredClusterDimension,
    cudaLaunchAttributeDeviceUpdatableKernelNode,
    cudaLaunchAttributeNvlinkUtilCentricScheduling,
};

/// An attribute's name, for a report.
[[nodiscard]] constexpr const char* launch_attribute_name(cudaLaunchAttributeID id) noexcept {
  switch (id) {
  case cudaLaunchAttributeCooperative:
    return "cooperative launch";
  case cudaLaunchAttributeClusterDimension:
    return "cluster dimension";
  case cudaLaunchAttributeClusterSchedulingPolicyPreference:
    return "cluster scheduling policy";
  case cudaLaunchAttributePriority:
    return "priority";
  case cudaLaunchAttributeMemSyncDomainMap:
    return "memory-sync domain map";
  case cudaLaunchAttributeMemSyncDomain:
    return "memory-sync domain";
  case cudaLaunchAttributePreferredClusterDimension:
    return "preferred cluster dimension";
  case cudaLaunchAttributeDeviceUpdatableKernelNode:
    return "device-updatable kernel node";
  default:
    return "NVLink-utilization-centric scheduling";
  }
}

/// FNV-1a, one 64-bit word at a time.
template <class = void>
class basic_signature_hash {
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
using signature_hash = basic_signature_hash<>;

/// What the driver says a kernel node launches: its function (a library's kernels too, which
/// the runtime's cudaGraphKernelNodeGetParams cannot name), as a number to compare.
template <class = void>
std::uint64_t kernel_identity(cudaGraphNode_t node) {
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  const CUresult status = driver().graph_kernel_node_get_params.require(
      "graph_family's one-executable mode")(node, &params);
  if (status != CUDA_SUCCESS) [[unlikely]] { // the driver's codes are the runtime's numbers
    throw_error(static_cast<cudaError_t>(status), "cuGraphKernelNodeGetParams");
  }
  return params.func != nullptr ? reinterpret_cast<std::uintptr_t>(params.func)
                                : reinterpret_cast<std::uintptr_t>(params.kern);
}

/// A kernel node's launch attribute `id` as read from the template (zero bytes where none was
/// given; an attribute this driver cannot read reads as a marker value, equal across keys).
template <class = void>
cudaLaunchAttributeValue launch_attribute(cudaGraphNode_t node, cudaLaunchAttributeID id) {
  cudaLaunchAttributeValue value;
  std::memset(&value, 0, sizeof value); // the bytes of the union a read leaves alone stay equal
  if (cudaGraphKernelNodeGetAttribute(node, id, &value) != cudaSuccess) {
    static_cast<void>(cudaGetLastError()); // graphcap's own read failed: its error, not the user's
    std::memset(&value, 0xff, sizeof value);
  }
  return value;
}

/// An attribute value's bytes as words (the union was zeroed before the read: its unused bytes
/// compare equal).
template <class = void>
std::array<std::uint64_t, sizeof(cudaLaunchAttributeValue) / 8>
value_words(const cudaLaunchAttributeValue& value) noexcept {
  std::array<std::uint64_t, sizeof(cudaLaunchAttributeValue) / 8> words{};
  std::memcpy(words.data(), &value, sizeof words);
  return words;
}

/// Adds the kernel node's function and compared launch attributes to `hash`.
template <class = void>
void add_kernel_launch(signature_hash& hash, cudaGraphNode_t node) {
  hash.add(kernel_identity(node));
  for (const cudaLaunchAttributeID id : launch_attributes_compared) {
    for (const std::uint64_t word : value_words(launch_attribute(node, id))) {
      hash.add(word);
    }
  }
}

/// The template's nodes in creation order (the order cudaGraphExecUpdate pairs them by).
template <class = void>
std::vector<cudaGraphNode_t> nodes_of(cudaGraph_t graph) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) {
    check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  }
  return nodes;
}

/// Why `graph` cannot share the executable of `held` though their topologies match: the first
/// kernel node (in creation order) whose function or compared launch attribute differs.
template <class = void>
std::string launch_difference(cudaGraph_t graph, cudaGraph_t held) {
  const std::vector<cudaGraphNode_t> mine = nodes_of(graph);
  const std::vector<cudaGraphNode_t> theirs = nodes_of(held);
  for (std::size_t i = 0; i < mine.size() && i < theirs.size(); ++i) {
    const cudaGraphNodeType type = node_type_of(mine[i]);
    if (type != cudaGraphNodeTypeKernel) {
      continue;
    }
    const std::string node = "kernel node " + std::to_string(i) + " (in creation order)";
    if (kernel_identity(mine[i]) != kernel_identity(theirs[i])) {
      return node + " launches another function than the executable of its topology";
    }
    for (const cudaLaunchAttributeID id : launch_attributes_compared) {
      const cudaLaunchAttributeValue a = launch_attribute(mine[i], id);
      const cudaLaunchAttributeValue b = launch_attribute(theirs[i], id);
      if (value_words(a) != value_words(b)) {
        std::string text = node + " has another " + launch_attribute_name(id);
        if (id == cudaLaunchAttributeClusterDimension) {
          text += " (" + std::to_string(a.clusterDim.x) + "x" + std::to_string(a.clusterDim.y) +
                  "x" + std::to_string(a.clusterDim.z) + " where the executable of its topology " +
                  "has " + std::to_string(b.clusterDim.x) + "x" + std::to_string(b.clusterDim.y) +
                  "x" + std::to_string(b.clusterDim.z) + ")";
        }
        return text + "; cudaGraphExecUpdate would keep the executable's";
      }
    }
  }
  return "its kernels' functions or launch attributes differ from the executable of its topology";
}

/// The signature of `graph` (a finished capture's template). Throws cuda_error if CUDA cannot
/// list its nodes or edges.
template <class = void>
topology_signature signature_of(cudaGraph_t graph) {
  const std::vector<cudaGraphNode_t> nodes = nodes_of(graph);
  const std::size_t count = nodes.size();
  signature_hash hash;
  signature_hash launches;
  hash.add(count);
  std::vector<std::pair<cudaGraphNode_t, std::size_t>> index_of; // sorted by handle
  index_of.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const cudaGraphNodeType type = node_type_of(nodes[i]);
    hash.add(static_cast<std::uint64_t>(type));
    if (type == cudaGraphNodeTypeKernel) {
      launches.add(i);
      add_kernel_launch(launches, nodes[i]);
    }
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
  return {count, hash.value(), launches.value()};
}

} // namespace graphcap::detail::families
