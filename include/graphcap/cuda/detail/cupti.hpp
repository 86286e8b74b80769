// graphcap/cuda/detail/cupti.hpp - where annotated nodes get their ids: CUPTI, or the driver's
// tools id.
//
// Only annotations.hpp includes this header, so only programs that use annot::on (and link
// graphcap::annotations, which brings libcupti) ever reach CUPTI; the core never does.
//
// Two sources of node ids, probed at run time, neither required:
//  - CUPTI (cuptiGetGraphNodeId, cuptiGetGraphExecId): works on the CUDA 13.0 driver; CUPTI's
//    kernel activity records carry the same ids as `graphNodeId`. Unavailable while another tool
//    (compute-sanitizer, Nsight Systems or Compute, cuda-gdb) holds CUPTI.
//  - the driver's tools id (cuGraphNodeGetToolsId, cuGraphExecGetId; CUDA 13.1 drivers), fetched
//    through cudaGetDriverEntryPointByVersion. Absent from the 13.0 driver of the H200, so this
//    path has never run; it is used only when CUPTI is unavailable.
#pragma once

#include <graphcap/cuda/node_id_source.hpp>

#include <graphcap/cuda/detail/capture_mode_guard.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace graphcap {

namespace detail {

/// The id a replayed node carries in CUPTI's kernel activity records, from the id CUPTI gives the
/// captured (template) node and the id of the executable graph that was launched.
///
/// Observed on the H200 (CUDA 13.0 driver 580), not documented by NVIDIA: a template node's id is
/// (template graph id << 32 | the node's index), and the kernel records of a replay carry
/// (executable graph id << 32 | the same index), the executable's id being cuptiGetGraphExecId's,
/// new for every instantiation. test/annotations/annotations_ids.gpu.cpp checks this against real
/// activity records; if a driver changes it, this is the one place to change.
[[nodiscard]] constexpr std::uint64_t replayed_node_id(std::uint32_t exec_graph_id,
                                                       std::uint64_t template_node_id) noexcept {
  constexpr std::uint64_t index_bits = 0xffffffffULL;
  return (std::uint64_t{exec_graph_id} << 32U) | (template_node_id & index_bits);
}

/// The id CUPTI gives the captured (template) node created `index`-th (from 0) in the template
/// graph `graph_id` (cuptiGetGraphId), as cudaGraphGetNodes lists them.
///
/// Observed on the H200 (CUDA 13.0 driver 580), not documented: cuptiGetGraphNodeId answers
/// (graph id << 32 | creation index), and cudaGraphGetNodes lists nodes in creation order.
/// annot::on asks cuptiGetGraphNodeId once per capture, for the last annotated node: its upper
/// half gives the graph's id, its lower half must be that node's index; where it is not, annot::on
/// asks node by node. test/annotations/annotations_ids.gpu.cpp checks the rule on every node. The
/// creation log of node_discovery::creation_callbacks gives the same index: CUPTI calls back once
/// per node, in creation order.
[[nodiscard]] constexpr std::uint64_t template_node_id_at(std::uint32_t graph_id,
                                                          std::uint32_t index) noexcept {
  return (std::uint64_t{graph_id} << 32U) | index;
}

/// CUPTI's name for a result ("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED").
inline std::string cupti_result_name(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) == CUPTI_SUCCESS && text != nullptr) {
    return text;
  }
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

/// The driver's tools-id functions (CUDA 13.1+), or null where the driver lacks them.
struct tools_id_api {
  using node_tools_id_fn = CUresult(CUDAAPI*)(CUgraphNode, unsigned long long*);
  using exec_id_fn = CUresult(CUDAAPI*)(CUgraphExec, unsigned int*);
  node_tools_id_fn node_tools_id = nullptr;
  exec_id_fn exec_id = nullptr;
  [[nodiscard]] bool available() const noexcept {
    return node_tools_id != nullptr && exec_id != nullptr;
  }
};

/// The CUDA version whose ABI the tools-id functions are asked for: 13.1, where they appeared.
inline constexpr unsigned int tools_id_abi_version = 13010;

/// Looks the tools-id functions up once per process. Never throws: a driver without them (every
/// driver before 13.1) leaves the table empty, and no error behind.
inline const tools_id_api& tools_ids() noexcept {
  static const tools_id_api api = [] {
    const auto find = [](const char* symbol) -> void* {
      void* function = nullptr;
      cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
      if (cudaGetDriverEntryPointByVersion(symbol, &function, tools_id_abi_version,
                                           cudaEnableDefault, &found) != cudaSuccess ||
          found != cudaDriverEntryPointSuccess) {
        static_cast<void>(cudaGetLastError());
        return nullptr;
      }
      return function;
    };
    tools_id_api table;
    // NOLINTBEGIN: how driver entry points are typed
    table.node_tools_id =
        reinterpret_cast<tools_id_api::node_tools_id_fn>(find("cuGraphNodeGetToolsId"));
    table.exec_id = reinterpret_cast<tools_id_api::exec_id_fn>(find("cuGraphExecGetId"));
    // NOLINTEND
    return table;
  }();
  return api;
}

/// What the first CUPTI call of the process answered, made outside any capture so that CUPTI's
/// own initialization never runs inside one. CUPTI_SUCCESS: ids (and traces) come from CUPTI.
/// CUPTI_ERROR_NOT_INITIALIZED, not remembered: CUDA itself is unusable (no driver, no device),
/// and the capture will fail with its own error.
inline CUptiResult cupti_probe() noexcept {
  static std::atomic<int> answered{-1};
  const int known = answered.load();
  if (known >= 0) {
    return static_cast<CUptiResult>(known);
  }
  const relaxed_capture_mode_guard relaxed; // a capture on another thread is left alone
  cudaGraph_t graph = nullptr;
  if (cudaGraphCreate(&graph, 0) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return CUPTI_ERROR_NOT_INITIALIZED;
  }
  std::uint32_t id = 0;
  const CUptiResult answer = cuptiGetGraphId(graph, &id);
  static_cast<void>(cudaGraphDestroy(graph));
  static_cast<void>(cudaGetLastError());
  answered.store(static_cast<int>(answer));
  return answer;
}

/// The id source for a capture that begins now (probes once per process).
inline node_id_source current_id_source() noexcept {
  if (cupti_probe() == CUPTI_SUCCESS) {
    return node_id_source::cupti;
  }
  return tools_ids().available() ? node_id_source::tools_id : node_id_source::none;
}

/// Why ids come from `source`, for the one notice a degraded configuration gives.
inline std::string id_source_reason(node_id_source source, CUptiResult cupti) {
  std::string reason = cupti == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                           ? "CUPTI is held by another tool (compute-sanitizer, Nsight Systems or "
                             "Compute, cuda-gdb): " +
                                 cupti_result_name(cupti)
                           : "CUPTI is unavailable: " + cupti_result_name(cupti);
  if (source == node_id_source::tools_id) {
    reason += "; node ids come from the driver's tools id, traces are unavailable";
  } else {
    reason += "; annotations are recorded by node, but node ids and traces are unavailable";
  }
  return reason;
}

/// A captured (template) node's id; 0 if the source has none for it, with CUPTI's answer in
/// `cupti` when CUPTI refused.
inline std::uint64_t template_node_id(node_id_source source, cudaGraphNode_t node,
                                      CUptiResult& cupti) noexcept {
  if (source == node_id_source::cupti) {
    std::uint64_t id = 0;
    cupti = cuptiGetGraphNodeId(node, &id);
    return cupti == CUPTI_SUCCESS ? id : 0;
  }
  if (source == node_id_source::tools_id) {
    unsigned long long id = 0;
    return tools_ids().node_tools_id(node, &id) == CUDA_SUCCESS ? id : 0;
  }
  return 0;
}

/// An executable graph's id; 0 if the source has none for it.
inline std::uint32_t exec_graph_id(node_id_source source, cudaGraphExec_t exec) noexcept {
  if (source == node_id_source::cupti) {
    std::uint32_t id = 0;
    return cuptiGetGraphExecId(exec, &id) == CUPTI_SUCCESS ? id : 0;
  }
  if (source == node_id_source::tools_id) {
    unsigned int id = 0;
    return tools_ids().exec_id(exec, &id) == CUDA_SUCCESS ? id : 0;
  }
  return 0;
}

} // namespace detail
} // namespace graphcap
