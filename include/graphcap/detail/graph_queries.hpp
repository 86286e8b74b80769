// graphcap/detail/graph_queries.hpp - what annot::on asks CUDA about a capture and its nodes:
// capture frontiers, dependents, roots, node lists and types, kernel names.
//
// Through the driver where it can (detail/driver.hpp): on the H200, with CUPTI loaded, the
// runtime's wrappers cost several times the driver's own calls (a node's type: about 50-90 ns
// against 7-12; a capture's frontier: 60-120 against 20), and annotations make one or more per
// node. The runtime answers where the driver table is unavailable (no driver, or a test double
// without it).
#pragma once

#include <graphcap/detail/demangle.hpp>
#include <graphcap/detail/driver.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphcap::detail {

/// The driver table, or null if this driver lacks one of its functions (annotations then ask the
/// runtime, or go without kernel names). Resolve it outside any capture.
inline const driver_api* driver_if_available() noexcept {
  try {
    return &driver();
  } catch (...) {
    static_cast<void>(cudaGetLastError());
    return nullptr;
  }
}

/// The capture and graph queries of the graph walk, each through the driver when `driver` is
/// set. Each returns false (the runtime's error cleared) where CUDA refuses.
struct graph_queries {
  const driver_api* driver = nullptr;

  /// `stream`'s capture status, capture id and frontier (with edge data: without it CUDA refuses
  /// to list edges that carry some).
  bool capture_info(cudaStream_t stream, cudaStreamCaptureStatus& status, unsigned long long& id,
                    const cudaGraphNode_t*& frontier, std::size_t& count) const noexcept {
    // The null stream means the per-thread default stream where the program was compiled for it,
    // which only the runtime knows.
    if (driver != nullptr && stream != nullptr) {
      CUstreamCaptureStatus cu_status = CU_STREAM_CAPTURE_STATUS_NONE;
      cuuint64_t cu_id = 0;
      const CUgraphEdgeData* edges = nullptr;
      if (driver->stream_get_capture_info(stream, &cu_status, &cu_id, nullptr, &frontier, &edges,
                                          &count) != CUDA_SUCCESS) {
        return false;
      }
      status = static_cast<cudaStreamCaptureStatus>(cu_status); // the same values
      id = cu_id;
      return true;
    }
    const cudaGraphEdgeData* edges = nullptr;
    if (cudaStreamGetCaptureInfo(stream, &status, &id, nullptr, &frontier, &edges, &count) !=
        cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    return true;
  }

  /// Up to `count` dependents of `node` into `out` (null: none, only the count), with their edge
  /// data into `edges` (null only with `out`); `count` becomes how many there are.
  bool dependents(cudaGraphNode_t node, cudaGraphNode_t* out, cudaGraphEdgeData* edges,
                  std::size_t& count) const noexcept {
    if (driver != nullptr) {
      // NOLINTNEXTLINE: CUgraphEdgeData and cudaGraphEdgeData are one layout
      auto* cu_edges = reinterpret_cast<CUgraphEdgeData*>(edges);
      return driver->graph_node_get_dependent_nodes(node, out, cu_edges, &count) == CUDA_SUCCESS;
    }
    if (cudaGraphNodeGetDependentNodes(node, out, edges, &count) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    return true;
  }

  /// Up to `count` root nodes of `graph` into `out` (null: only the count).
  bool roots(cudaGraph_t graph, cudaGraphNode_t* out, std::size_t& count) const noexcept {
    if (driver != nullptr) {
      return driver->graph_get_root_nodes(graph, out, &count) == CUDA_SUCCESS;
    }
    if (cudaGraphGetRootNodes(graph, out, &count) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    return true;
  }

  /// Up to `count` nodes of `graph`, in creation order, into `out` (null: only the count).
  bool nodes(cudaGraph_t graph, cudaGraphNode_t* out, std::size_t& count) const noexcept {
    if (driver != nullptr) {
      return driver->graph_get_nodes(graph, out, &count) == CUDA_SUCCESS;
    }
    if (cudaGraphGetNodes(graph, out, &count) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    return true;
  }

  /// A node's type; cudaGraphNodeTypeCount where the runtime's enum has none (batch mem-op
  /// nodes) or the query fails.
  [[nodiscard]] cudaGraphNodeType type(cudaGraphNode_t node) const noexcept {
    if (driver != nullptr) {
      CUgraphNodeType cu_type = CU_GRAPH_NODE_TYPE_KERNEL;
      if (driver->graph_node_get_type(node, &cu_type) != CUDA_SUCCESS ||
          cu_type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) {
        return cudaGraphNodeTypeCount;
      }
      return static_cast<cudaGraphNodeType>(cu_type); // the same values
    }
    cudaGraphNodeType node_type = cudaGraphNodeTypeCount;
    if (cudaGraphNodeGetType(node, &node_type) != cudaSuccess) {
      static_cast<void>(cudaGetLastError()); // batch mem-op nodes: the runtime cannot tell
      return cudaGraphNodeTypeCount;
    }
    return node_type;
  }
};

/// A kernel's readable name, from the driver's (mangled) name, kept for the life of the process
/// so that annotations can hold views of it: one copy per distinct kernel. Graphs launch the same
/// kernels many times (a layer per scope), so each thread remembers the name pointers it has
/// seen, checking the text again on a hit (an unloaded module's pointer may be reused).
inline std::string_view interned_kernel_name(const char* mangled) {
  struct name_entry {
    std::string mangled;
    std::string readable;
  };
  thread_local std::unordered_map<const char*, const name_entry*> seen;
  if (const auto hit = seen.find(mangled); hit != seen.end() && hit->second->mangled == mangled) {
    return hit->second->readable;
  }
  static std::mutex mutex;
  static std::unordered_map<std::string_view, std::unique_ptr<const name_entry>> table;
  const name_entry* entry = nullptr;
  {
    const std::lock_guard lock{mutex};
    const auto found = table.find(std::string_view{mangled});
    if (found != table.end()) {
      entry = found->second.get();
    } else {
      auto added = std::make_unique<const name_entry>(name_entry{mangled, demangled(mangled)});
      entry = added.get();
      table.emplace(std::string_view{entry->mangled}, std::move(added));
    }
  }
  seen.insert_or_assign(mangled, entry);
  return entry->readable;
}

/// Kernel nodes' demangled names, for the nodes of one capture. Graphs launch the same few
/// kernels many times: a function met before in this capture is not asked its name again (safe
/// within one capture: its nodes keep their functions' modules loaded).
class kernel_names {
public:
  explicit kernel_names(const driver_api* driver) noexcept : driver_(driver) {}

  /// The name of kernel node `node`, or "" if the driver cannot tell.
  std::string_view of(cudaGraphNode_t node) noexcept {
    if (driver_ == nullptr) {
      return {};
    }
    try {
      CUDA_KERNEL_NODE_PARAMS_v2 params{};
      if (driver_->graph_kernel_node_get_params(node, &params) != CUDA_SUCCESS) {
        return {};
      }
      const void* key = params.func != nullptr ? static_cast<const void*>(params.func)
                                               : static_cast<const void*>(params.kern);
      for (const auto& [known, name] : met_) {
        if (known == key) {
          return name;
        }
      }
      const std::string_view name = ask(params);
      if (met_.size() < remembered) {
        met_.emplace_back(key, name);
      }
      return name;
    } catch (...) { // out of memory in the name table
      return {};
    }
  }

private:
  static constexpr std::size_t remembered = 16;

  std::string_view ask(const CUDA_KERNEL_NODE_PARAMS_v2& params) const {
    CUfunction function = params.func;
    if (function == nullptr && params.kern != nullptr &&
        driver_->kernel_get_function(&function, params.kern) != CUDA_SUCCESS) {
      return {};
    }
    const char* name = nullptr;
    if (function == nullptr || driver_->func_get_name(&name, function) != CUDA_SUCCESS ||
        name == nullptr) {
      return {};
    }
    return interned_kernel_name(name);
  }

  const driver_api* driver_;
  std::vector<std::pair<const void*, std::string_view>> met_;
};

} // namespace graphcap::detail
