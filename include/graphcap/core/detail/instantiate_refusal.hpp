// graphcap/core/detail/instantiate_refusal.hpp - what CUDA refused when an instantiation failed.
// The failed call (cudaGraphInstantiateWithFlags) says only cudaErrorInvalidValue; asked again with
// cudaGraphInstantiateWithParams, CUDA names the reason (result_out) and the node (errNode_out).
// Cold: runs only after an instantiation failed.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/node_type.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace graphcap::detail {

/// Why CUDA refuses to instantiate `graph` with `flags`, in words ("" when it does not say, or
/// when it instantiates it now after all).
GRAPHCAP_COLD inline std::string instantiate_refusal(cudaGraph_t graph, unsigned long long flags) {
  cudaGraphInstantiateParams params{};
  params.flags = flags;
  cudaGraphExec_t probe = nullptr;
  cudaError_t status = cudaSuccess;
  {
    const relaxed_capture_mode_guard relaxed;
    status = cudaGraphInstantiateWithParams(&probe, graph, &params);
    if (status == cudaSuccess) {
      ignore(cudaGraphExecDestroy(probe));
    }
  }
  static_cast<void>(cudaGetLastError());
  if (status == cudaSuccess) {
    return {};
  }
  std::string node = "a node";
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  if (params.errNode_out != nullptr &&
      cudaGraphNodeGetType(params.errNode_out, &type) == cudaSuccess) {
    const std::string_view name = to_string(type);
    node = (name.front() == 'e' ? "an " : "a ") + std::string{name} + " node";
  }
  static_cast<void>(cudaGetLastError());
  switch (params.result_out) {
  case cudaGraphInstantiateConditionalHandleUnused:
    return "CUDA says a conditional handle has no conditional node "
           "(cudaGraphInstantiateConditionalHandleUnused): a condition made with condition() "
           "that no conditional node uses";
  case cudaGraphInstantiateInvalidStructure:
    return "CUDA says the graph's structure is invalid at " + node +
           " (cudaGraphInstantiateInvalidStructure): a cycle, in a conditional body most likely";
  case cudaGraphInstantiateNodeOperationNotSupported:
    return "CUDA refused " + node +
           " where it is (cudaGraphInstantiateNodeOperationNotSupported): a conditional body "
           "may hold kernel, memset, memcpy, empty, child-graph and conditional nodes only";
  case cudaGraphInstantiateMultipleDevicesNotSupported:
    return "CUDA refused " + node +
           " (cudaGraphInstantiateMultipleDevicesNotSupported): nodes of several devices, or, "
           "as the H200 reports it, a memcpy node of a conditional body that touches pageable "
           "host memory";
  default:
    return {};
  }
}

} // namespace graphcap::detail
