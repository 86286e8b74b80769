// graphcap/cuda/node_type.hpp - to_string(cudaGraphNodeType): the short names that
// annotations' JSON and traces give node types.
#pragma once

#include <graphcap/config.hpp>

#include <cuda_runtime_api.h>

#include <string_view>

namespace graphcap {

/// A node type's short name ("kernel", "memcpy", "event_record", ...).
[[nodiscard]] constexpr std::string_view to_string(cudaGraphNodeType type) noexcept {
  switch (type) {
  case cudaGraphNodeTypeKernel:
    return "kernel";
  case cudaGraphNodeTypeMemcpy:
    return "memcpy";
  case cudaGraphNodeTypeMemset:
    return "memset";
  case cudaGraphNodeTypeHost:
    return "host";
  case cudaGraphNodeTypeGraph:
    return "child_graph";
  case cudaGraphNodeTypeEmpty:
    return "empty";
  case cudaGraphNodeTypeWaitEvent:
    return "event_wait";
  case cudaGraphNodeTypeEventRecord:
    return "event_record";
  case cudaGraphNodeTypeExtSemaphoreSignal:
    return "semaphore_signal";
  case cudaGraphNodeTypeExtSemaphoreWait:
    return "semaphore_wait";
  case cudaGraphNodeTypeMemAlloc:
    return "mem_alloc";
  case cudaGraphNodeTypeMemFree:
    return "mem_free";
  case cudaGraphNodeTypeConditional:
    return "conditional";
  default:
    return "unknown";
  }
}

} // namespace graphcap
