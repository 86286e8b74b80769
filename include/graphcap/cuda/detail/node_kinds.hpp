// graphcap/cuda/detail/node_kinds.hpp - what CUDA allows each kind of graph node, in one table
// (#49): the wings ask it (kind_of(type).can_disable, ...) instead of each listing node types
// again, so a new kind of node is one row here. What a wing does per type (the parameters it
// reads, a picture's label) stays with the wing. Rows follow the CUDA runtime API reference
// (cudaGraphNodeSetEnabled, conditional nodes' bodies, cudaGraphAddChildGraphNode) and, where
// it says so, graphcap's probes on the H200.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
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

/// Every node type of the CUDA 13 runtime's enum; the last row stands for a type the runtime
/// cannot name (batch mem-op nodes) or one newer than this table.
inline constexpr node_kind node_kinds[] = {
    // type, name, can_disable, in_body, flat_copy, executable_memory, graph_memory, event
    {cudaGraphNodeTypeKernel, "kernel", true, true, true, true, false, false},
    {cudaGraphNodeTypeMemcpy, "memcpy", true, true, true, true, false, false},
    {cudaGraphNodeTypeMemset, "memset", true, true, true, false, false, false},
    {cudaGraphNodeTypeHost, "host", false, false, true, true, false, false},
    {cudaGraphNodeTypeGraph, "child_graph", false, true, true, true, false, false},
    {cudaGraphNodeTypeEmpty, "empty", false, true, true, false, false, false},
    {cudaGraphNodeTypeWaitEvent, "event_wait", false, false, true, true, false, true},
    {cudaGraphNodeTypeEventRecord, "event_record", false, false, true, true, false, true},
    {cudaGraphNodeTypeExtSemaphoreSignal, "semaphore_signal", false, false, false, true, false,
     false},
    {cudaGraphNodeTypeExtSemaphoreWait, "semaphore_wait", false, false, false, true, false, false},
    {cudaGraphNodeTypeMemAlloc, "mem_alloc", false, false, false, true, true, false},
    {cudaGraphNodeTypeMemFree, "mem_free", false, false, false, true, true, false},
    {cudaGraphNodeTypeConditional, "conditional", false, true, false, true, false, false},
    {cudaGraphNodeTypeCount, "unknown", false, false, false, true, false, false},
};

/// The row of `type` (the "unknown" row for a type the table does not hold). Capture-time
/// checks ask it, never a replay.
[[nodiscard]] constexpr const node_kind& kind_of(cudaGraphNodeType type) noexcept {
  for (const node_kind& each : node_kinds) {
    if (each.type == type) {
      return each;
    }
  }
  return node_kinds[sizeof(node_kinds) / sizeof(node_kinds[0]) - 1];
}

/// The type of `node` (cudaGraphNodeGetType); cuda_error if CUDA cannot tell.
[[nodiscard]] inline cudaGraphNodeType node_type_of(cudaGraphNode_t node) {
  cudaGraphNodeType type = cudaGraphNodeTypeCount;
  check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
  return type;
}

// The table holds each type once.
static_assert([] {
  constexpr std::size_t rows = sizeof(node_kinds) / sizeof(node_kinds[0]);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = i + 1; j < rows; ++j) {
      if (node_kinds[i].type == node_kinds[j].type) {
        return false;
      }
    }
  }
  return true;
}());

} // namespace graphcap::detail
