// graphcap/detail/driver.hpp - the few CUDA driver functions graphcap calls, resolved once:
// liveness asks pointer attributes and kernel parameters, annotations graph and capture queries.
//
// graphcap never links the driver library (-lcuda): a binary linked with it would not even start
// on a machine without a driver. The driver functions it needs are fetched through the runtime's
// cudaGetDriverEntryPointByVersion, once per process, into a table of function pointers.
#pragma once

#include <graphcap/detail/cuda_check.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <string>

namespace graphcap::detail {

/// Driver functions, each with the ABI of the version in its type's name.
struct driver_api {
  PFN_cuPointerGetAttribute_v4000 pointer_get_attribute = nullptr;
  PFN_cuGraphKernelNodeGetParams_v12000 graph_kernel_node_get_params = nullptr;
  PFN_cuFuncGetParamInfo_v12040 func_get_param_info = nullptr;
  PFN_cuFuncGetName_v12030 func_get_name = nullptr;
  PFN_cuKernelGetFunction_v12000 kernel_get_function = nullptr;
  PFN_cuGraphNodeGetType_v10000 graph_node_get_type = nullptr;
  PFN_cuStreamGetCaptureInfo_v12030 stream_get_capture_info = nullptr;
  PFN_cuGraphNodeGetDependentNodes_v12030 graph_node_get_dependent_nodes = nullptr;
  PFN_cuGraphGetRootNodes_v10000 graph_get_root_nodes = nullptr;
  PFN_cuGraphGetNodes_v10000 graph_get_nodes = nullptr;
};

/// The CUDA version whose ABIs the table asks for: the newest one among its types (12.4, for
/// cuFuncGetParamInfo). Asking by version pins each function to the ABI its type declares, even
/// under a newer driver.
inline constexpr unsigned int driver_abi_version = 12040;

/// Fetches one driver function, or throws cuda_error naming it.
template <class Function>
Function load_driver_function(const char* symbol) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status = cudaGetDriverEntryPointByVersion(symbol, &function, driver_abi_version,
                                                              cudaEnableDefault, &found);
  const std::string call = std::string{"cudaGetDriverEntryPointByVersion("} + symbol + ")";
  if (status != cudaSuccess) {
    throw_cuda(status, call);
  }
  if (found != cudaDriverEntryPointSuccess || function == nullptr) {
    throw_error(cudaErrorSymbolNotFound, call,
                found == cudaDriverEntryPointVersionNotSufficent
                    ? "the installed CUDA driver is older than CUDA 12.4; graphcap's liveness "
                      "check needs a driver for CUDA 12.4 or newer"
                    : "the installed CUDA driver does not provide this function; graphcap's "
                      "liveness check needs a driver for CUDA 12.4 or newer");
  }
  return reinterpret_cast<Function>(function); // NOLINT: how driver entry points are typed
}

/// The driver table, resolved at the first call of the process. A failed resolution throws and
/// is retried by the next call.
inline const driver_api& driver() {
  static const driver_api table{
      .pointer_get_attribute =
          load_driver_function<PFN_cuPointerGetAttribute_v4000>("cuPointerGetAttribute"),
      .graph_kernel_node_get_params =
          load_driver_function<PFN_cuGraphKernelNodeGetParams_v12000>("cuGraphKernelNodeGetParams"),
      .func_get_param_info =
          load_driver_function<PFN_cuFuncGetParamInfo_v12040>("cuFuncGetParamInfo"),
      .func_get_name = load_driver_function<PFN_cuFuncGetName_v12030>("cuFuncGetName"),
      .kernel_get_function =
          load_driver_function<PFN_cuKernelGetFunction_v12000>("cuKernelGetFunction"),
      .graph_node_get_type =
          load_driver_function<PFN_cuGraphNodeGetType_v10000>("cuGraphNodeGetType"),
      .stream_get_capture_info =
          load_driver_function<PFN_cuStreamGetCaptureInfo_v12030>("cuStreamGetCaptureInfo"),
      .graph_node_get_dependent_nodes =
          load_driver_function<PFN_cuGraphNodeGetDependentNodes_v12030>(
              "cuGraphNodeGetDependentNodes"),
      .graph_get_root_nodes =
          load_driver_function<PFN_cuGraphGetRootNodes_v10000>("cuGraphGetRootNodes"),
      .graph_get_nodes = load_driver_function<PFN_cuGraphGetNodes_v10000>("cuGraphGetNodes"),
  };
  return table;
}

} // namespace graphcap::detail
