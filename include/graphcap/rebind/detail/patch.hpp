// graphcap/rebind/detail/patch.hpp - the CUDA calls that give a node of the executable, or of
// the kept template, the rebinder's copy of its parameters. Kernel nodes go through the driver
// (cuGraphExecKernelNodeSetParams, cuGraphKernelNodeSetParams: the parameters as the driver
// gave them, whoever launched the kernel), memcpy and memset nodes through the runtime.
#pragma once

#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/rebind/detail/sites.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace graphcap::detail::rebind {

/// The failed call's name, for messages.
[[nodiscard]] inline const char* exec_call(node_kind kind) noexcept {
  switch (kind) {
  case node_kind::kernel:
    return "cuGraphExecKernelNodeSetParams";
  case node_kind::memcpy:
    return "cudaGraphExecMemcpyNodeSetParams";
  case node_kind::memset:
  default:
    return "cudaGraphExecMemsetNodeSetParams";
  }
}

[[nodiscard]] inline const char* template_call(node_kind kind) noexcept {
  switch (kind) {
  case node_kind::kernel:
    return "cuGraphKernelNodeSetParams";
  case node_kind::memcpy:
    return "cudaGraphMemcpyNodeSetParams";
  case node_kind::memset:
  default:
    return "cudaGraphMemsetNodeSetParams";
  }
}

/// Gives the executable's counterpart of `node` its parameters; the status of the call (as the
/// runtime's status of the same number for the driver's).
template <class = void>
[[nodiscard]] cudaError_t patch_executable(cudaGraphExec_t exec, patchable_node& node) {
  switch (node.kind) {
  case node_kind::kernel:
    node.kernel.kernelParams = node.arguments.data();
    return static_cast<cudaError_t>(driver().graph_exec_kernel_node_set_params.require(
        rebind_needs)(exec, node.node, &node.kernel));
  case node_kind::memcpy:
    return cudaGraphExecMemcpyNodeSetParams(exec, node.node, &node.copy);
  case node_kind::memset:
  default:
    return cudaGraphExecMemsetNodeSetParams(exec, node.node, &node.set);
  }
}

/// Gives the template's `node` its parameters.
template <class = void>
[[nodiscard]] cudaError_t patch_template(patchable_node& node) {
  switch (node.kind) {
  case node_kind::kernel:
    node.kernel.kernelParams = node.arguments.data();
    return static_cast<cudaError_t>(
        driver().graph_kernel_node_set_params.require(rebind_needs)(node.node, &node.kernel));
  case node_kind::memcpy:
    return cudaGraphMemcpyNodeSetParams(node.node, &node.copy);
  case node_kind::memset:
  default:
    return cudaGraphMemsetNodeSetParams(node.node, &node.set);
  }
}

} // namespace graphcap::detail::rebind
