// graphcap/cuda/detail/node_kinds.hpp - what CUDA allows each kind of graph node, in one table
// (#49): the wings ask it (kind_of(type).can_disable, ...) instead of each listing node types
// again, so a new kind of node is one row here. What a wing does per type (the parameters it
// reads, a picture's label) stays with the wing. Rows follow the CUDA runtime API reference
// (cudaGraphNodeSetEnabled, conditional nodes' bodies, cudaGraphAddChildGraphNode) and, where
// it says so, graphcap's probes on the H200.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <string_view>

namespace graphcap::detail {

/// What graphcap needs to know of one kind of node.
struct node_kind {
  cudaGraphNodeType type;
  std::string_view name;  ///< the short name annotations' JSON, traces and messages use
  bool can_disable;       ///< cudaGraphNodeSetEnabled turns it off and on (set_enabled)
  bool in_body;           ///< CUDA allows it in a conditional node's body
  bool flat_copy;         ///< replay_loop's unrolled chain copies it node by node
  bool executable_memory; ///< weighs in an executable's device memory (the ledger; memset: 0
                          ///< measured per node on the H200, benchmark/probes/executable_memory)
  bool graph_memory;      ///< a graph memory node (allocation or free)
  bool event;             ///< an event record or wait
};

/// The row of `type`: every node type of the CUDA 13 runtime's enum, and an "unknown" row for a
/// type the runtime cannot name (batch mem-op nodes) or one newer than this table. A switch that
/// returns the row by value, not an array: code that asks (a message in the lean core's
/// instantiation failure) reaches no table in memory (test/symbols checks it).
[[nodiscard]] constexpr node_kind kind_of(cudaGraphNodeType type) noexcept {
  // type, name, can_disable, in_body, flat_copy, executable_memory, graph_memory, event
  switch (type) {
  case cudaGraphNodeTypeKernel:
    return {type, "kernel", true, true, true, true, false, false};
  case cudaGraphNodeTypeMemcpy:
    return {type, "memcpy", true, true, true, true, false, false};
  case cudaGraphNodeTypeMemset:
    return {type, "memset", true, true, true, false, false, false};
  case cudaGraphNodeTypeHost:
    return {type, "host", false, false, true, true, false, false};
  case cudaGraphNodeTypeGraph:
    return {type, "child_graph", false, true, true, true, false, false};
  case cudaGraphNodeTypeEmpty:
    return {type, "empty", false, true, true, false, false, false};
  case cudaGraphNodeTypeWaitEvent:
    return {type, "event_wait", false, false, true, true, false, true};
  case cudaGraphNodeTypeEventRecord:
    return {type, "event_record", false, false, true, true, false, true};
  case cudaGraphNodeTypeExtSemaphoreSignal:
    return {type, "semaphore_signal", false, false, false, true, false, false};
  case cudaGraphNodeTypeExtSemaphoreWait:
    return {type, "semaphore_wait", false, false, false, true, false, false};
  case cudaGraphNodeTypeMemAlloc:
    return {type, "mem_alloc", false, false, false, true, true, false};
  case cudaGraphNodeTypeMemFree:
    return {type, "mem_free", false, false, false, true, true, false};
  case cudaGraphNodeTypeConditional:
    return {type, "conditional", false, true, false, true, false, false};
  default:
    return {cudaGraphNodeTypeCount, "unknown", false, false, false, true, false, false};
  }
}

/// The type of `node` (cudaGraphNodeGetType); cuda_error if CUDA cannot tell.
[[nodiscard]] inline cudaGraphNodeType node_type_of(cudaGraphNode_t node) {
  cudaGraphNodeType type = cudaGraphNodeTypeCount;
  check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
  return type;
}

// Each row names its own type (a row pasted under another case would not).
static_assert([] {
  for (int value = 0; value < static_cast<int>(cudaGraphNodeTypeCount); ++value) {
    const auto type = static_cast<cudaGraphNodeType>(value);
    const node_kind row = kind_of(type);
    if (row.type != type && row.type != cudaGraphNodeTypeCount) {
      return false;
    }
  }
  return true;
}());

} // namespace graphcap::detail
