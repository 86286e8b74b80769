// Driver entry points. cudaGetDriverEntryPoint hands out the double's own
// implementations of the few driver functions graphcap uses; libcuda is
// never linked.
#include "state.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstring>

using namespace cuda_double::detail;

namespace {

CUresult CUDAAPI pointer_get_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return driver_api("cuPointerGetAttribute", [&] {
    if (!data)
      return CUDA_ERROR_INVALID_VALUE;
    const void* p = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(ptr));
    const Allocation* a = find_allocation(p);
    // Freed (or never allocated) memory has no attributes.
    if (!a || !a->mapped)
      return CUDA_ERROR_INVALID_VALUE;
    const bool pinned = a->kind == Allocation::Kind::pinned;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = a->buffer_id;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a->device;
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = pinned ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!pinned)
        return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = const_cast<void*>(p);
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = reinterpret_cast<std::uintptr_t>(a->base);
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<std::size_t*>(data) = a->size;
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = a->pool;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

// Kernel nodes (kernel.cpp). The v1 struct is the v2 one without its last two fields.
CUresult CUDAAPI graph_kernel_node_get_params_v1(CUgraphNode node,
                                                 CUDA_KERNEL_NODE_PARAMS_v1* params) {
  return driver_api("cuGraphKernelNodeGetParams", [&] {
    if (!params)
      return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS_v2 full{};
    const CUresult r = kernel_node_params(node, full);
    if (r == CUDA_SUCCESS)
      std::memcpy(params, &full, sizeof *params);
    return r;
  });
}

CUresult CUDAAPI graph_kernel_node_get_params_v2(CUgraphNode node,
                                                 CUDA_KERNEL_NODE_PARAMS_v2* params) {
  return driver_api("cuGraphKernelNodeGetParams", [&] {
    return params ? kernel_node_params(node, *params) : CUDA_ERROR_INVALID_VALUE;
  });
}

CUresult CUDAAPI graph_kernel_node_set_params(CUgraphNode node,
                                              const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  return driver_api("cuGraphKernelNodeSetParams",
                    [&] { return set_kernel_node_params(node, params); });
}

CUresult CUDAAPI graph_exec_kernel_node_set_params(CUgraphExec exec, CUgraphNode node,
                                                   const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  return driver_api("cuGraphExecKernelNodeSetParams",
                    [&] { return exec_set_kernel_node_params(exec, node, params); });
}

CUresult CUDAAPI func_get_param_info(CUfunction func, size_t index, size_t* offset, size_t* size) {
  return driver_api("cuFuncGetParamInfo",
                    [&] { return function_param_info(func, index, offset, size); });
}

CUresult CUDAAPI func_get_name(const char** name, CUfunction func) {
  return driver_api("cuFuncGetName", [&] { return function_name(name, func); });
}

CUresult CUDAAPI kernel_get_function(CUfunction* func, CUkernel kernel) {
  return driver_api("cuKernelGetFunction", [&] { return kernel_function(func, kernel); });
}

// The driver's form of a runtime call the double already implements: counted and fault-injected
// under the driver's name, leaving the runtime's last error alone. The double's error codes
// used here have the same values in both APIs.
template <class Call>
CUresult as_driver(const char* name, Call&& call) {
  thread_state().as_driver = name;
  const cudaError_t err = call();
  thread_state().as_driver = nullptr; // api() cleared it already, unless the call never got there
  return static_cast<CUresult>(err);
}

// NOLINTBEGIN: the driver's and the runtime's handle and enum types are one layout
CUresult CUDAAPI stream_get_capture_info(CUstream stream, CUstreamCaptureStatus* status,
                                         cuuint64_t* id, CUgraph* graph,
                                         const CUgraphNode** dependencies,
                                         const CUgraphEdgeData** edges, size_t* count) {
  return as_driver("cuStreamGetCaptureInfo", [&] {
    return cudaStreamGetCaptureInfo(stream, reinterpret_cast<cudaStreamCaptureStatus*>(status),
                                    reinterpret_cast<unsigned long long*>(id), graph, dependencies,
                                    reinterpret_cast<const cudaGraphEdgeData**>(edges), count);
  });
}

// The driver's node parameters are the runtime's plus trailing fields the double ignores (the
// conditional's context): the same size, and the fields the double reads at the same offsets.
static_assert(sizeof(CUgraphNodeParams) == sizeof(cudaGraphNodeParams));
static_assert(offsetof(CUgraphNodeParams, conditional) ==
              offsetof(cudaGraphNodeParams, conditional));
static_assert(offsetof(CUDA_CONDITIONAL_NODE_PARAMS, phGraph_out) ==
              offsetof(cudaConditionalNodeParams, phGraph_out));

CUresult CUDAAPI graph_add_node_v2(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps,
                                   const CUgraphEdgeData* edges, size_t count,
                                   CUgraphNodeParams* params) {
  return as_driver("cuGraphAddNode", [&] {
    return cudaGraphAddNode(node, graph, deps, reinterpret_cast<const cudaGraphEdgeData*>(edges),
                            count, reinterpret_cast<cudaGraphNodeParams*>(params));
  });
}

CUresult CUDAAPI graph_add_node_v1(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps,
                                   size_t count, CUgraphNodeParams* params) {
  return as_driver("cuGraphAddNode", [&] {
    return cudaGraphAddNode(node, graph, deps, nullptr, count,
                            reinterpret_cast<cudaGraphNodeParams*>(params));
  });
}

CUresult CUDAAPI graph_node_get_dependent_nodes(CUgraphNode node, CUgraphNode* dependents,
                                                CUgraphEdgeData* edges, size_t* count) {
  return as_driver("cuGraphNodeGetDependentNodes", [&] {
    return cudaGraphNodeGetDependentNodes(node, dependents,
                                          reinterpret_cast<cudaGraphEdgeData*>(edges), count);
  });
}
// NOLINTEND

// The double has no contexts: `ctx` is not looked at.
CUresult CUDAAPI graph_conditional_handle_create(CUgraphConditionalHandle* handle, CUgraph graph,
                                                 CUcontext, unsigned default_value,
                                                 unsigned flags) {
  return as_driver("cuGraphConditionalHandleCreate", [&] {
    // The same 64 bits under another integer type.
    cudaGraphConditionalHandle out = 0;
    const cudaError_t e =
        cudaGraphConditionalHandleCreate(handle ? &out : nullptr, graph, default_value, flags);
    if (e == cudaSuccess)
      *handle = out;
    return e;
  });
}

CUresult CUDAAPI graph_get_root_nodes(CUgraph graph, CUgraphNode* roots, size_t* count) {
  return as_driver("cuGraphGetRootNodes",
                   [&] { return cudaGraphGetRootNodes(graph, roots, count); });
}

CUresult CUDAAPI graph_get_nodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  return as_driver("cuGraphGetNodes", [&] { return cudaGraphGetNodes(graph, nodes, count); });
}

CUresult CUDAAPI graph_node_get_type(CUgraphNode node, CUgraphNodeType* type) {
  return driver_api("cuGraphNodeGetType", [&] {
    if (!node || !type || !state().nodes.count(node))
      return CUDA_ERROR_INVALID_VALUE;
    *type = static_cast<CUgraphNodeType>(node->type); // the runtime's values are the driver's
    return CUDA_SUCCESS;
  });
}

struct EntryPoint {
  const char* symbol;
  int introduced; // CUDA version of this ABI of the symbol
  void* function;
};

// Newest ABI first for each symbol.
const EntryPoint kEntryPoints[] = {
    {"cuPointerGetAttribute", 4000, reinterpret_cast<void*>(&pointer_get_attribute)},
    {"cuGraphKernelNodeGetParams", 12000,
     reinterpret_cast<void*>(&graph_kernel_node_get_params_v2)},
    {"cuGraphKernelNodeGetParams", 10000,
     reinterpret_cast<void*>(&graph_kernel_node_get_params_v1)},
    {"cuGraphKernelNodeSetParams", 12000, reinterpret_cast<void*>(&graph_kernel_node_set_params)},
    {"cuGraphExecKernelNodeSetParams", 12000,
     reinterpret_cast<void*>(&graph_exec_kernel_node_set_params)},
    {"cuFuncGetParamInfo", 12040, reinterpret_cast<void*>(&func_get_param_info)},
    {"cuFuncGetName", 12030, reinterpret_cast<void*>(&func_get_name)},
    {"cuKernelGetFunction", 12000, reinterpret_cast<void*>(&kernel_get_function)},
    {"cuGraphNodeGetType", 10000, reinterpret_cast<void*>(&graph_node_get_type)},
    {"cuStreamGetCaptureInfo", 12030, reinterpret_cast<void*>(&stream_get_capture_info)},
    {"cuGraphNodeGetDependentNodes", 12030,
     reinterpret_cast<void*>(&graph_node_get_dependent_nodes)},
    {"cuGraphGetRootNodes", 10000, reinterpret_cast<void*>(&graph_get_root_nodes)},
    {"cuGraphGetNodes", 10000, reinterpret_cast<void*>(&graph_get_nodes)},
    {"cuGraphAddNode", 12030, reinterpret_cast<void*>(&graph_add_node_v2)},
    {"cuGraphAddNode", 12020, reinterpret_cast<void*>(&graph_add_node_v1)},
    {"cuGraphConditionalHandleCreate", 12030,
     reinterpret_cast<void*>(&graph_conditional_handle_create)},
};

cudaError_t entry_point(const char* symbol, void** funcPtr, unsigned version,
                        unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  if (!symbol || !funcPtr)
    return cudaErrorInvalidValue;
  if (flags &
      ~static_cast<unsigned long long>(cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)) {
    return cudaErrorInvalidValue;
  }
  if (version > static_cast<unsigned>(kDriverVersion))
    return cudaErrorInvalidValue;
  *funcPtr = nullptr;
  const auto hidden = state().hidden_driver_functions.find(symbol);
  if (hidden != state().hidden_driver_functions.end()) {
    if (status)
      *status = hidden->second;
    return cudaSuccess;
  }
  cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
  for (const VmmEntryPoint& e : kVmmEntryPoints) { // vmm.cpp: all of CUDA 10.2
    if (std::strcmp(e.symbol, symbol) == 0) {
      const bool recent_enough = version >= 10020;
      *funcPtr = recent_enough ? e.function : nullptr;
      result =
          recent_enough ? cudaDriverEntryPointSuccess : cudaDriverEntryPointVersionNotSufficent;
      if (status)
        *status = result;
      return cudaSuccess;
    }
  }
  for (const EntryPoint& e : kEntryPoints) {
    if (std::strcmp(e.symbol, symbol) != 0)
      continue;
    if (static_cast<unsigned>(e.introduced) <= version) {
      *funcPtr = e.function;
      result = cudaDriverEntryPointSuccess;
      break;
    }
    result = cudaDriverEntryPointVersionNotSufficent;
  }
  if (status)
    *status = result;
  return cudaSuccess;
}

} // namespace

extern "C" {

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* driverStatus) {
  // The runtime's own version selects the ABI.
  return api(__func__,
             [&] { return entry_point(symbol, funcPtr, kRuntimeVersion, flags, driverStatus); });
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* driverStatus) {
  return api(__func__,
             [&] { return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus); });
}

} // extern "C"
