// graphcap/liveness/detail/scan.hpp - liveness::check's one pass over a captured graph: which
// addresses it uses, and how.
//
// Every node of the graph and of its child graphs is listed once, with its type asked once,
// through the driver (cuGraphNodeGetType: several times cheaper than the runtime's wrapper where
// CUPTI is loaded). Memory allocation nodes give the graph's own memory (internal, never an
// input); then kernel nodes give the pointer-sized words of their parameters (through the
// driver: cuGraphKernelNodeGetParams, cuFuncGetParamInfo for the layout, cuFuncGetName for the
// messages), memcpy nodes their source and destination, memset nodes their destination. A word
// is an input where the driver knows an allocation at it (liveness_buffer_id).
//
// The driver functions are resolved at their first use here, outside any capture; one the driver
// lacks fails the scan with a cuda_error that names the liveness check and the function. Kernel
// functions are asked only for graphs with kernel nodes, and a missing cuFuncGetName only leaves
// the kernel unnamed in messages.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/demangle.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/cuda/detail/kernel_parameters.hpp>
#include <graphcap/liveness/detail/inputs.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphcap::detail::liveness {

/// A node of a captured graph with its type.
struct liveness_node {
  cudaGraphNode_t node;
  CUgraphNodeType type;
};

/// Throws cuda_error for a failed driver call `call` (the driver's status as the runtime's of the
/// same number).
template <class = void>
void liveness_driver_check(CUresult status, const char* call) {
  if (status != CUDA_SUCCESS) [[unlikely]] {
    throw_error(static_cast<cudaError_t>(status), call);
  }
}

/// Appends every node of `graph`, each with its type (one cuGraphNodeGetType per node), then
/// those of its child graphs.
template <class = void>
void liveness_collect_nodes(cudaGraph_t graph, PFN_cuGraphNodeGetType_v10000 node_type,
                            std::vector<liveness_node>& nodes) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> listed(count);
  check(cudaGraphGetNodes(graph, listed.data(), &count), "cudaGraphGetNodes");
  listed.resize(count);
  const std::size_t first = nodes.size();
  for (cudaGraphNode_t node : listed) {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    liveness_driver_check(node_type(node, &type), "cuGraphNodeGetType");
    nodes.push_back({node, type});
  }
  for (std::size_t i = first; i < first + listed.size(); ++i) {
    if (nodes[i].type == CU_GRAPH_NODE_TYPE_GRAPH) {
      cudaGraph_t child = nullptr;
      check(cudaGraphChildGraphNodeGetGraph(nodes[i].node, &child),
            "cudaGraphChildGraphNodeGetGraph");
      liveness_collect_nodes(child, node_type, nodes);
    }
  }
}

/// One pass over a captured graph's nodes, recording the inputs it uses into a liveness_tracking.
template <class = void>
class liveness_scan {
public:
  /// `tracking`: its internal ranges complete (the graph's allocations, the excluded ranges).
  liveness_scan(liveness_tracking& tracking, liveness_pointer_query query)
      : tracking_(tracking), query_(query) {
    for (std::size_t i = 0; i < tracking_.inputs.size(); ++i) {
      index_.emplace(tracking_.inputs[i].address, i);
    }
  }

  /// Records the addresses `node` uses.
  void node(const liveness_node& node) {
    switch (node.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      kernel(node.node);
      break;
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      cudaMemcpy3DParms params{};
      check(cudaGraphMemcpyNodeGetParams(node.node, &params), "cudaGraphMemcpyNodeGetParams");
      if (params.srcArray == nullptr) {
        use(reinterpret_cast<std::uintptr_t>(params.srcPtr.ptr), [] { return "memcpy source"; });
      }
      if (params.dstArray == nullptr) {
        use(reinterpret_cast<std::uintptr_t>(params.dstPtr.ptr),
            [] { return "memcpy destination"; });
      }
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      cudaMemsetParams params{};
      check(cudaGraphMemsetNodeGetParams(node.node, &params), "cudaGraphMemsetNodeGetParams");
      use(reinterpret_cast<std::uintptr_t>(params.dst), [] { return "memset destination"; });
      break;
    }
    default:
      break;
    }
  }

private:
  /// A kernel's parameter layout and name, read once per function during a scan.
  struct kernel_layout {
    std::string name;
    std::vector<parameter_slot> parameters; // cuda/detail/kernel_parameters.hpp
  };

  void kernel(cudaGraphNode_t node) {
    const driver_api& api = driver();
    CUDA_KERNEL_NODE_PARAMS_v2 params{};
    liveness_driver_check(api.graph_kernel_node_get_params.require(liveness_needs)(node, &params),
                          "cuGraphKernelNodeGetParams");
    CUfunction function = params.func;
    if (function == nullptr && params.kern != nullptr) {
      liveness_driver_check(api.kernel_get_function.require(liveness_needs)(&function, params.kern),
                            "cuKernelGetFunction");
    }
    const kernel_layout& layout = layout_of(function);
    for (std::size_t index = 0; index < layout.parameters.size(); ++index) {
      // Plain variables, not a structured binding: lambdas capture those only since clang 16.
      const std::size_t offset = layout.parameters[index].offset;
      const std::size_t size = layout.parameters[index].size;
      const auto* bytes = static_cast<const unsigned char*>(
          parameter_source(params.kernelParams, params.extra, layout.parameters[index], index));
      if (bytes == nullptr) {
        continue;
      }
      // Pointers sit at 8-byte-aligned offsets of the parameter block, inside structs too.
      for (std::size_t at = (8 - offset % 8) % 8; at + 8 <= size; at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes + at, sizeof word);
        if (word < 4096) {
          continue; // null, small integers: never an allocation
        }
        use(static_cast<std::uintptr_t>(word), [&] {
          std::string what = "kernel " + layout.name + ", parameter " + std::to_string(index) +
                             " (offset " + std::to_string(offset + at) + ")";
          if (at != 0 || size != 8) {
            what += ", the word at byte " + std::to_string(at) + " of it";
          }
          return what;
        });
      }
    }
  }

  const kernel_layout& layout_of(CUfunction function) {
    auto known = layouts_.find(function);
    if (known != layouts_.end()) {
      return known->second;
    }
    const driver_api& api = driver();
    const auto param_info = api.func_get_param_info.require(liveness_needs);
    kernel_layout layout;
    const auto get_name = api.func_get_name.find(); // without it, the kernel goes unnamed
    const char* name = nullptr;
    layout.name =
        get_name != nullptr && get_name(&name, function) == CUDA_SUCCESS && name != nullptr
            ? demangled(name)
            : std::string{"(unnamed kernel)"};
    const CUresult status = read_parameter_layout(param_info, function, layout.parameters);
    if (status != CUDA_SUCCESS) [[unlikely]] {
      throw_error(static_cast<cudaError_t>(status),
                  "cuFuncGetParamInfo (kernel " + layout.name + ")");
    }
    return layouts_.emplace(function, std::move(layout)).first->second;
  }

  /// Records that the graph uses `address`, if it is an allocation outside internal memory.
  template <class Describe>
  void use(std::uintptr_t address, Describe&& describe) {
    if (address == 0 || tracking_.is_internal(address)) {
      return;
    }
    auto known = index_.find(address);
    if (known == index_.end()) {
      const std::optional<unsigned long long> buffer_id = liveness_buffer_id(query_, address);
      if (!buffer_id) {
        return; // not CUDA memory (a plain integer, pageable host memory)
      }
      tracking_.inputs.push_back({address, buffer_id, std::nullopt, {}});
      known = index_.emplace(address, tracking_.inputs.size() - 1).first;
    }
    tracking_.inputs[known->second].add_use(std::string{describe()});
  }

  liveness_tracking& tracking_;
  liveness_pointer_query query_;
  std::unordered_map<std::uintptr_t, std::size_t> index_;
  std::unordered_map<CUfunction, kernel_layout> layouts_;
};

/// The one pass over a captured graph and its conditional bodies: its memory allocation nodes
/// become internal ranges (and inputs declared inside them are dropped), then every node's
/// addresses are recorded.
template <class = void>
void liveness_scan_graph(cudaGraph_t graph, const std::vector<cudaGraph_t>& bodies,
                         liveness_tracking& tracking, liveness_pointer_query query) {
  std::vector<liveness_node> nodes;
  const auto node_type = driver().graph_node_get_type.require(liveness_needs);
  liveness_collect_nodes(graph, node_type, nodes);
  for (const cudaGraph_t body : bodies) { // conditional bodies: not among the graph's nodes
    liveness_collect_nodes(body, node_type, nodes);
  }
  for (const liveness_node& node : nodes) {
    if (node.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      cudaMemAllocNodeParams params{};
      check(cudaGraphMemAllocNodeGetParams(node.node, &params), "cudaGraphMemAllocNodeGetParams");
      const auto begin = reinterpret_cast<std::uintptr_t>(params.dptr);
      tracking.internal.push_back({begin, begin + params.bytesize});
    }
  }
  tracking.drop_internal_inputs();
  liveness_scan<> scan{tracking, query};
  for (const liveness_node& node : nodes) {
    scan.node(node);
  }
}

} // namespace graphcap::detail::liveness
