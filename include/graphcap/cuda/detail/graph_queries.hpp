// graphcap/cuda/detail/graph_queries.hpp - what annot::on asks CUDA about a capture and its nodes:
// capture frontiers, dependents, roots, node lists and types, kernel names.
//
// Through the driver where it can (cuda/detail/driver.hpp): on the H200, with CUPTI loaded, the
// runtime's wrappers cost several times the driver's own calls (a node's type: about 50-90 ns
// against 7-12; a capture's frontier: 60-120 against 20), and annotations make one or more per
// node. Annotations never fail a capture for a driver function: each query the driver cannot
// answer because it lacks the function goes to the runtime (kernel names: go without).
#pragma once

#include <graphcap/cuda/detail/demangle.hpp>
#include <graphcap/cuda/detail/driver.hpp>

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

/// How annotations word their need of a driver function (driver_function_needed()).
inline constexpr std::string_view annotations_need = "graphcap's annotations need";

/// The driver table with every function annotations use looked up, or null if the driver
/// provides none of them (no driver). Call it outside any capture: the queries during one only
/// read what it resolved (driver_function::cached()), so a function this driver lacks is looked
/// up again at the next call of this, never inside the capture.
inline const driver_api* driver_if_available() noexcept {
  const driver_api& table = driver();
  bool any = false;
  const auto look_up = [&any](const auto& function) { any = function.find() != nullptr || any; };
  look_up(table.stream_get_capture_info);
  look_up(table.graph_node_get_dependent_nodes);
  look_up(table.graph_get_root_nodes);
  look_up(table.graph_get_nodes);
  look_up(table.graph_node_get_type);
  look_up(table.graph_kernel_node_get_params);
  look_up(table.kernel_get_function);
  look_up(table.func_get_name);
  return any ? &table : nullptr;
}

/// What annotations go without on this driver, in words for a notice ("graphcap's annotations
/// need cuFuncGetName (CUDA 12.3 driver or newer) for kernel names; ..."), or "" where they lack
/// nothing. After driver_if_available() (`driver`: its result): reads what it resolved.
inline std::string annotation_driver_gaps(const driver_api* driver) {
  if (driver == nullptr) {
    return "the CUDA driver's functions cannot be looked up: annotations ask the runtime, and "
           "kernel nodes go without names";
  }
  std::string gaps;
  const auto note = [&gaps](const auto& function, std::string_view without) {
    if (function.cached() == nullptr) {
      gaps += gaps.empty() ? "" : "; ";
      gaps += driver_function_needed(annotations_need, function.symbol(), function.version);
      gaps += without;
    }
  };
  note(driver->graph_kernel_node_get_params, " for kernel names");
  note(driver->kernel_get_function, " for kernel names");
  note(driver->func_get_name, " for kernel names");
  constexpr std::string_view slower = " to query graphs quickly (the runtime answers instead)";
  note(driver->stream_get_capture_info, slower);
  note(driver->graph_node_get_dependent_nodes, slower);
  note(driver->graph_get_root_nodes, slower);
  note(driver->graph_get_nodes, slower);
  note(driver->graph_node_get_type, slower);
  return gaps;
}

/// The capture and graph queries of the graph walk, each through the driver where `driver` (from
/// driver_if_available()) has the function resolved, else through the runtime. Each returns
/// false (the runtime's error cleared) where CUDA refuses; none looks a driver function up.
struct graph_queries {
  /// From driver_if_available(); null: every query goes to the runtime.
  const driver_api* driver = nullptr;

  /// `stream`'s capture status, capture id and frontier (with edge data: without it CUDA refuses
  /// to list edges that carry some).
  bool capture_info(cudaStream_t stream, cudaStreamCaptureStatus& status, unsigned long long& id,
                    const cudaGraphNode_t*& frontier, std::size_t& count) const noexcept {
    // The null stream means the per-thread default stream where the program was compiled for it,
    // which only the runtime knows.
    if (const auto query = resolved(&driver_api::stream_get_capture_info);
        query != nullptr && stream != nullptr) {
      CUstreamCaptureStatus cu_status = CU_STREAM_CAPTURE_STATUS_NONE;
      cuuint64_t cu_id = 0;
      const CUgraphEdgeData* edges = nullptr;
      if (query(stream, &cu_status, &cu_id, nullptr, &frontier, &edges, &count) != CUDA_SUCCESS) {
        return false;
      }
      status = static_cast<cudaStreamCaptureStatus>(cu_status); // the same values
      id = cu_id;
      return true;
    }
    const cudaGraphEdgeData* edges = nullptr;
    return runtime(
        cudaStreamGetCaptureInfo(stream, &status, &id, nullptr, &frontier, &edges, &count));
  }

  /// The id of the capture `stream` is actively capturing into; 0 if none (or CUDA refused).
  [[nodiscard]] unsigned long long active_capture_id(cudaStream_t stream) const noexcept {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    const cudaGraphNode_t* frontier = nullptr;
    std::size_t count = 0;
    return capture_info(stream, status, id, frontier, count) &&
                   status == cudaStreamCaptureStatusActive
               ? id
               : 0;
  }

  /// Up to `count` dependents of `node` into `out` (null: none, only the count), with their edge
  /// data into `edges` (null only with `out`); `count` becomes how many there are.
  bool dependents(cudaGraphNode_t node, cudaGraphNode_t* out, cudaGraphEdgeData* edges,
                  std::size_t& count) const noexcept {
    if (const auto query = resolved(&driver_api::graph_node_get_dependent_nodes)) {
      // NOLINTNEXTLINE: CUgraphEdgeData and cudaGraphEdgeData are one layout
      auto* cu_edges = reinterpret_cast<CUgraphEdgeData*>(edges);
      return query(node, out, cu_edges, &count) == CUDA_SUCCESS;
    }
    return runtime(cudaGraphNodeGetDependentNodes(node, out, edges, &count));
  }

  /// Up to `count` root nodes of `graph` into `out` (null: only the count).
  bool roots(cudaGraph_t graph, cudaGraphNode_t* out, std::size_t& count) const noexcept {
    if (const auto query = resolved(&driver_api::graph_get_root_nodes)) {
      return query(graph, out, &count) == CUDA_SUCCESS;
    }
    return runtime(cudaGraphGetRootNodes(graph, out, &count));
  }

  /// Up to `count` nodes of `graph`, in creation order, into `out` (null: only the count).
  bool nodes(cudaGraph_t graph, cudaGraphNode_t* out, std::size_t& count) const noexcept {
    if (const auto query = resolved(&driver_api::graph_get_nodes)) {
      return query(graph, out, &count) == CUDA_SUCCESS;
    }
    return runtime(cudaGraphGetNodes(graph, out, &count));
  }

  /// A node's type; cudaGraphNodeTypeCount where the runtime's enum has none (batch mem-op
  /// nodes) or the query fails.
  [[nodiscard]] cudaGraphNodeType type(cudaGraphNode_t node) const noexcept {
    if (const auto query = resolved(&driver_api::graph_node_get_type)) {
      CUgraphNodeType cu_type = CU_GRAPH_NODE_TYPE_KERNEL;
      if (query(node, &cu_type) != CUDA_SUCCESS || cu_type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) {
        return cudaGraphNodeTypeCount;
      }
      return static_cast<cudaGraphNodeType>(cu_type); // the same values
    }
    cudaGraphNodeType node_type = cudaGraphNodeTypeCount;
    if (!runtime(cudaGraphNodeGetType(node, &node_type))) {
      return cudaGraphNodeTypeCount; // batch mem-op nodes: the runtime cannot tell
    }
    return node_type;
  }

private:
  /// The driver's function `member` if resolved, else null (the runtime then answers).
  template <class Function, unsigned int Version>
  Function resolved(const driver_function<Function, Version> driver_api::*member) const noexcept {
    return driver != nullptr ? (driver->*member).cached() : nullptr;
  }

  /// True for cudaSuccess; otherwise clears the runtime's error.
  static bool runtime(cudaError_t status) noexcept {
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    return true;
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
  /// `driver`: from driver_if_available() (null: no names).
  explicit kernel_names(const driver_api* driver) noexcept : driver_(driver) {}

  /// The name of kernel node `node`, or "" if the driver cannot tell (or lacks a function it
  /// takes: the three named in annotation_driver_gaps()).
  std::string_view of(cudaGraphNode_t node) noexcept {
    const auto get_params =
        driver_ != nullptr ? driver_->graph_kernel_node_get_params.cached() : nullptr;
    if (get_params == nullptr) {
      return {};
    }
    try {
      CUDA_KERNEL_NODE_PARAMS_v2 params{};
      if (get_params(node, &params) != CUDA_SUCCESS) {
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
    if (function == nullptr && params.kern != nullptr) {
      const auto get_function = driver_->kernel_get_function.cached();
      if (get_function == nullptr || get_function(&function, params.kern) != CUDA_SUCCESS) {
        return {};
      }
    }
    const auto get_name = driver_->func_get_name.cached();
    const char* name = nullptr;
    if (function == nullptr || get_name == nullptr || get_name(&name, function) != CUDA_SUCCESS ||
        name == nullptr) {
      return {};
    }
    return interned_kernel_name(name);
  }

  const driver_api* driver_;
  std::vector<std::pair<const void*, std::string_view>> met_;
};

} // namespace graphcap::detail
