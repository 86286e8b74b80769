// Kernels: the registration nvcc's generated host code makes at start-up, <<<...>>> launches,
// cudaLaunchKernel, kernel nodes, and the driver's kernel functions. No device code runs: a
// kernel runs the host model a test gave it (cuda_double/kernels.hpp).
#include "state.hpp"

#include <cuda_double/control.hpp>
#include <cuda_double/kernels.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

using namespace cuda_double::detail;

namespace cuda_double::detail {

// One per host stub (the address a program names a kernel by). Never freed: handles and
// nodes point at it, and nvcc's launch code caches its cudaKernel_t in a static.
struct Kernel {
  const void* stub = nullptr;
  std::string name; // mangled device name from __cudaRegisterFunction; "" if never registered
  CUfunc_st function;
  CUkern_st handle;
  std::vector<kernel_parameter> parameters; // from the model's signature
  std::vector<std::size_t> offsets;
  std::size_t bytes = 0;
  kernel_model model; // empty: no model
  std::size_t runs = 0;
};

} // namespace cuda_double::detail

namespace {

std::atomic<std::size_t> live_arguments{0};

std::map<const void*, std::unique_ptr<Kernel>>& registry() {
  static std::map<const void*, std::unique_ptr<Kernel>> kernels;
  return kernels;
}

// Under the lock.
Kernel& kernel_of(const void* stub) {
  std::unique_ptr<Kernel>& k = registry()[stub];
  if (!k) {
    k = std::make_unique<Kernel>();
    k->stub = stub;
    k->function.kernel = k.get();
    k->handle.kernel = k.get();
  }
  return *k;
}

Kernel* known_function(CUfunction func) {
  if (!func)
    return nullptr;
  for (auto& [stub, k] : registry()) {
    if (&k->function == func)
      return k.get();
  }
  return nullptr;
}

Kernel* known_handle(CUkernel handle) {
  if (!handle)
    return nullptr;
  for (auto& [stub, k] : registry()) {
    if (&k->handle == handle)
      return k.get();
  }
  return nullptr;
}

std::string readable(const Kernel& k) {
  if (k.name.empty()) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", k.stub);
    return std::string{"at "} + address + " (not registered by a .cu file)";
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(k.name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : k.name;
  std::free(demangled);
  return out;
}

void no_model(const Kernel& k) {
  violation("kernel " + readable(k) +
            " launched with no model: the double runs no device code. Give it a host model "
            "before the launch: cuda_double::emulate_kernel(&kernel, [](parameters...) { ... }) "
            "(<cuda_double/kernels.hpp>, docs/testing.md)");
}

// What the H200 refuses of a launch's shape (cudaErrorInvalidConfiguration).
bool valid_shape(dim3 grid, dim3 block) {
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return false;
  if (grid.y > 65535 || grid.z > 65535 || block.x > 1024 || block.y > 1024 || block.z > 64)
    return false;
  return std::size_t{block.x} * block.y * block.z <= 1024;
}

// Sets (or adds) the attribute `id` of a launch.
void set_attribute(std::vector<cudaLaunchAttribute>& attributes, cudaLaunchAttributeID id,
                   const cudaLaunchAttributeValue& value) {
  for (cudaLaunchAttribute& a : attributes) {
    if (a.id == id) {
      a.val = value;
      return;
    }
  }
  cudaLaunchAttribute added{};
  added.id = id;
  added.val = value;
  attributes.push_back(added);
}

// The launch attributes of the kernel model running on this thread (null outside a model).
thread_local const std::vector<cudaLaunchAttribute>* running_attributes = nullptr;

cudaError_t launch(Kernel* k, dim3 grid, dim3 block, void** args, std::size_t shared,
                   cudaStream_t stream, const cudaLaunchAttribute* attributes = nullptr,
                   unsigned attribute_count = 0) {
  if (!k)
    return cudaErrorInvalidDeviceFunction;
  if (!valid_shape(grid, block))
    return cudaErrorInvalidConfiguration;
  if (!k->model) {
    no_model(*k);
    return cudaErrorInvalidDeviceFunction;
  }
  if (!args && !k->parameters.empty())
    return cudaErrorInvalidValue;
  Target t;
  if (cudaError_t e = begin_stream_op(stream, t))
    return e;
  std::unique_ptr<KernelCall> call =
      copy_launch(*k, grid, block, static_cast<unsigned>(shared), args);
  for (unsigned a = 0; a < attribute_count; ++a)
    set_attribute(call->attributes, attributes[a].id, attributes[a].val);
  if (t.capture) {
    capture_node(t, cudaGraphNodeTypeKernel)->kernel = std::move(call);
    return cudaSuccess;
  }
  return run_kernel(*call);
}

// The launch configurations <<<...>>> pushes, each popped by the launch it precedes.
struct Configuration {
  dim3 grid, block;
  std::size_t shared;
  cudaStream_t stream;
};
thread_local std::vector<Configuration> configurations;

// A module registered by __cudaRegisterFatBinary: the handle is the address of its cell.
struct Module {
  void* fat_binary = nullptr;
};

template <class Node>
cudaError_t with_kernel_node(cudaGraphNode_t node, Node&& f) {
  if (!node || !state().nodes.count(node) || node->type != cudaGraphNodeTypeKernel || !node->kernel)
    return cudaErrorInvalidValue;
  return f(*node);
}

// A kernel node's arguments from cudaKernelNodeParams (kernelParams only: the double does not
// parse `extra`).
cudaError_t call_from_params(const cudaKernelNodeParams* p, std::unique_ptr<KernelCall>& out) {
  if (!p || !p->func)
    return cudaErrorInvalidValue;
  if (p->extra)
    return cudaErrorNotSupported;
  Kernel& k = kernel_of(p->func);
  if (!valid_shape(p->gridDim, p->blockDim))
    return cudaErrorInvalidConfiguration;
  if (!k.model) {
    no_model(k);
    return cudaErrorInvalidDeviceFunction;
  }
  if (!p->kernelParams && !k.parameters.empty())
    return cudaErrorInvalidValue;
  out = copy_launch(k, p->gridDim, p->blockDim, p->sharedMemBytes, p->kernelParams);
  return cudaSuccess;
}

} // namespace

namespace cuda_double::detail {

KernelCall::KernelCall() {
  ++live_arguments;
}

KernelCall::KernelCall(const KernelCall& other)
    : kernel(other.kernel), grid(other.grid), block(other.block), shared_bytes(other.shared_bytes),
      storage(other.storage), attributes(other.attributes) {
  ++live_arguments;
  for (std::size_t offset : kernel->offsets)
    params.push_back(reinterpret_cast<unsigned char*>(storage.data()) + offset);
}

KernelCall& KernelCall::operator=(const KernelCall& other) {
  if (this != &other) {
    kernel = other.kernel;
    grid = other.grid;
    block = other.block;
    shared_bytes = other.shared_bytes;
    storage = other.storage;
    attributes = other.attributes;
    params.clear();
    for (std::size_t offset : kernel->offsets)
      params.push_back(reinterpret_cast<unsigned char*>(storage.data()) + offset);
  }
  return *this;
}

KernelCall::~KernelCall() {
  --live_arguments;
}

std::unique_ptr<KernelCall> copy_launch(Kernel& k, dim3 grid, dim3 block, unsigned shared,
                                        void* const* args) {
  auto call = std::make_unique<KernelCall>();
  call->kernel = &k;
  call->grid = grid;
  call->block = block;
  call->shared_bytes = shared;
  call->storage.resize((k.bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  auto* bytes = reinterpret_cast<unsigned char*>(call->storage.data());
  for (std::size_t i = 0; i < k.parameters.size(); ++i) {
    std::memcpy(bytes + k.offsets[i], args[i], k.parameters[i].size);
    call->params.push_back(bytes + k.offsets[i]);
  }
  return call;
}

cudaError_t run_kernel(const KernelCall& call) {
  Kernel& k = *call.kernel;
  if (!k.model) { // dropped by clear_kernel_models() after the node was made
    no_model(k);
    return cudaErrorInvalidDeviceFunction;
  }
  // The model gets its own copy, as each launch of a kernel does: it may change its parameters.
  KernelCall copy = call;
  ThreadState& ts = thread_state();
  ts.in_callback = true; // a kernel cannot call the runtime
  cudaError_t result = cudaSuccess;
  running_attributes = &call.attributes;
  try {
    k.model(copy.params.data(), call.grid, call.block);
    ++k.runs;
  } catch (...) {
    result = cudaErrorLaunchFailure;
  }
  running_attributes = nullptr;
  thread_state().in_callback = false;
  return result;
}

void reset_kernel_runs() {
  for (auto& [stub, k] : registry())
    k->runs = 0;
}

CUresult kernel_node_params(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v2& out) {
  if (!node || !state().nodes.count(node) || node->type != cudaGraphNodeTypeKernel ||
      !node->kernel) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  KernelCall& call = *node->kernel;
  out = CUDA_KERNEL_NODE_PARAMS_v2{};
  out.func = &call.kernel->function;
  out.gridDimX = call.grid.x;
  out.gridDimY = call.grid.y;
  out.gridDimZ = call.grid.z;
  out.blockDimX = call.block.x;
  out.blockDimY = call.block.y;
  out.blockDimZ = call.block.z;
  out.sharedMemBytes = call.shared_bytes;
  out.kernelParams = call.params.data();
  out.kern = &call.kernel->handle;
  return CUDA_SUCCESS;
}

CUresult function_param_info(CUfunction func, std::size_t index, std::size_t* offset,
                             std::size_t* size) {
  Kernel* k = known_function(func);
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  // Without a model the double does not know the kernel's parameters.
  if (!k->model)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (index >= k->parameters.size())
    return CUDA_ERROR_INVALID_VALUE;
  if (offset)
    *offset = k->offsets[index];
  if (size)
    *size = k->parameters[index].size;
  return CUDA_SUCCESS;
}

CUresult function_name(const char** name, CUfunction func) {
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  Kernel* k = known_function(func);
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  if (k->name.empty())
    return CUDA_ERROR_NOT_FOUND;
  *name = k->name.c_str();
  return CUDA_SUCCESS;
}

CUresult kernel_function(CUfunction* func, CUkernel handle) {
  if (!func)
    return CUDA_ERROR_INVALID_VALUE;
  Kernel* k = known_handle(handle);
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  *func = &k->function;
  return CUDA_SUCCESS;
}

// A kernel node's call from the driver's parameters: `func`, else `kern`; kernelParams only.
CUresult call_from_driver_params(const CUDA_KERNEL_NODE_PARAMS_v2* p,
                                 std::unique_ptr<KernelCall>& out) {
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  Kernel* k = p->func ? known_function(p->func) : known_handle(p->kern);
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  if (p->extra)
    return CUDA_ERROR_NOT_SUPPORTED;
  const dim3 grid(p->gridDimX, p->gridDimY, p->gridDimZ);
  const dim3 block(p->blockDimX, p->blockDimY, p->blockDimZ);
  if (!valid_shape(grid, block))
    return CUDA_ERROR_INVALID_VALUE;
  if (!k->model) {
    no_model(*k);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!p->kernelParams && !k->parameters.empty())
    return CUDA_ERROR_INVALID_VALUE;
  out = copy_launch(*k, grid, block, p->sharedMemBytes, p->kernelParams);
  return CUDA_SUCCESS;
}

CUresult set_kernel_node_params(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  if (!node || !state().nodes.count(node) || node->type != cudaGraphNodeTypeKernel)
    return CUDA_ERROR_INVALID_VALUE;
  std::unique_ptr<KernelCall> call;
  if (const CUresult r = call_from_driver_params(params, call))
    return r;
  if (node->kernel)
    call->attributes = node->kernel->attributes; // a node keeps its launch attributes
  node->kernel = std::move(call);
  return CUDA_SUCCESS;
}

CUresult exec_set_kernel_node_params(CUgraphExec exec, CUgraphNode node,
                                     const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  if (!is_live_exec(exec) || !node || !state().nodes.count(node) ||
      node->type != cudaGraphNodeTypeKernel) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUgraphNode_st* copy = exec_counterpart(*exec, *node);
  if (!copy || copy->type != cudaGraphNodeTypeKernel)
    return CUDA_ERROR_INVALID_VALUE;
  std::unique_ptr<KernelCall> call;
  if (const CUresult r = call_from_driver_params(params, call))
    return r;
  if (copy->kernel)
    call->attributes = copy->kernel->attributes; // the executable keeps its launch attributes
  copy->kernel = std::move(call);
  return CUDA_SUCCESS;
}

void set_kernel_model(const void* stub, std::vector<kernel_parameter> parameters,
                      kernel_model model) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  Kernel& k = kernel_of(stub);
  k.offsets.clear();
  std::size_t at = 0;
  for (const kernel_parameter& p : parameters) {
    at = (at + p.align - 1) / p.align * p.align; // as the device lays out a parameter block
    k.offsets.push_back(at);
    at += p.size;
  }
  k.bytes = at;
  k.parameters = std::move(parameters);
  k.model = std::move(model);
}

} // namespace cuda_double::detail

namespace cuda_double {

cudaLaunchAttributeValue launch_attribute(cudaLaunchAttributeID id) {
  cudaLaunchAttributeValue value{};
  if (running_attributes != nullptr) {
    for (const cudaLaunchAttribute& a : *running_attributes) {
      if (a.id == id)
        value = a.val;
    }
  }
  return value;
}

void clear_kernel_models() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  for (auto& [stub, k] : registry()) {
    k->model = nullptr;
    k->runs = 0;
  }
}

std::size_t kernel_runs(const void* kernel) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  auto it = registry().find(kernel);
  return it == registry().end() ? 0 : it->second->runs;
}

std::string kernel_name(const void* kernel) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  auto it = registry().find(kernel);
  return it == registry().end() ? std::string{} : it->second->name;
}

std::size_t live_kernel_arguments() {
  return live_arguments.load();
}

namespace {

bool same_memset(const cudaMemsetParams& a, const cudaMemsetParams& b) {
  return a.dst == b.dst && a.pitch == b.pitch && a.value == b.value &&
         a.elementSize == b.elementSize && a.width == b.width && a.height == b.height;
}

bool same_pos(const cudaPos& a, const cudaPos& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

bool same_pitched(const cudaPitchedPtr& a, const cudaPitchedPtr& b) {
  return a.ptr == b.ptr && a.pitch == b.pitch && a.xsize == b.xsize && a.ysize == b.ysize;
}

bool same_memcpy(const cudaMemcpy3DParms& a, const cudaMemcpy3DParms& b) {
  return a.srcArray == b.srcArray && same_pos(a.srcPos, b.srcPos) &&
         same_pitched(a.srcPtr, b.srcPtr) && a.dstArray == b.dstArray &&
         same_pos(a.dstPos, b.dstPos) && same_pitched(a.dstPtr, b.dstPtr) &&
         a.extent.width == b.extent.width && a.extent.height == b.extent.height &&
         a.extent.depth == b.extent.depth && a.kind == b.kind;
}

bool same_dim(const dim3& a, const dim3& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

// The first field of one node in which `a` and `b` differ, or nullptr.
const char* node_difference(const exec_node_fields& a, const exec_node_fields& b) {
  if (a.type != b.type)
    return "type";
  if (a.enabled != b.enabled)
    return "enable state";
  if (a.function != b.function)
    return "kernel function";
  if (!same_dim(a.grid, b.grid))
    return "kernel grid";
  if (!same_dim(a.block, b.block))
    return "kernel block";
  if (a.shared_bytes != b.shared_bytes)
    return "kernel dynamic shared memory";
  if (a.arguments != b.arguments)
    return "kernel arguments";
  if (a.attributes != b.attributes)
    return "kernel launch attributes";
  if (!same_memset(a.memset, b.memset))
    return "memset parameters";
  if (!same_memcpy(a.memcpy, b.memcpy))
    return "memcpy parameters";
  if (a.event != b.event)
    return "event";
  return nullptr;
}

} // namespace

bool operator==(const exec_node_fields& a, const exec_node_fields& b) {
  return node_difference(a, b) == nullptr;
}

std::vector<exec_node_fields> exec_nodes(cudaGraphExec_t exec) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  if (!is_live_exec(exec))
    throw std::invalid_argument("cuda_double::exec_nodes: not a live executable graph");
  std::vector<const CUgraphNode_st*> nodes;
  for (const auto& n : exec->graph->nodes)
    nodes.push_back(n.get());
  std::sort(nodes.begin(), nodes.end(),
            [](const CUgraphNode_st* a, const CUgraphNode_st* b) { return a->index < b->index; });
  std::vector<exec_node_fields> fields;
  for (const CUgraphNode_st* n : nodes) {
    exec_node_fields f;
    f.type = n->type;
    f.enabled = !n->disabled;
    if (n->type == cudaGraphNodeTypeKernel && n->kernel) {
      const KernelCall& call = *n->kernel;
      f.function = call.kernel->stub;
      f.grid = call.grid;
      f.block = call.block;
      f.shared_bytes = call.shared_bytes;
      const auto* bytes = reinterpret_cast<const unsigned char*>(call.storage.data());
      f.arguments.assign(bytes, bytes + call.kernel->bytes);
      for (const cudaLaunchAttribute& a : call.attributes) {
        const auto* id = reinterpret_cast<const unsigned char*>(&a.id);
        f.attributes.insert(f.attributes.end(), id, id + sizeof a.id);
        const auto* value = reinterpret_cast<const unsigned char*>(&a.val);
        f.attributes.insert(f.attributes.end(), value, value + sizeof a.val);
      }
    } else if (n->type == cudaGraphNodeTypeMemset) {
      f.memset = n->memset;
    } else if (n->type == cudaGraphNodeTypeMemcpy) {
      f.memcpy = n->memcpy;
    } else if (n->type == cudaGraphNodeTypeEventRecord || n->type == cudaGraphNodeTypeWaitEvent) {
      f.event = n->event;
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

std::string exec_difference(const std::vector<exec_node_fields>& a,
                            const std::vector<exec_node_fields>& b) {
  if (a.size() != b.size())
    return "node count (" + std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (const char* field = node_difference(a[i], b[i]))
      return "node " + std::to_string(i) + " " + field;
  }
  return {};
}

} // namespace cuda_double

// What nvcc's generated host code calls (crt/host_runtime.h, crt/device_functions.h), declared
// here: those headers are nvcc's own.
extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaUnregisterFatBinary(void** fatCubinHandle);
void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress,
                       const char* deviceName, int ext, size_t size, int constant, int global);
char __cudaInitModule(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                            dim3* bDim, dim3* gDim, int* wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                       void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream);
} // extern "C"

extern "C" {

// Registration runs before main, from static initializers: no lock is taken, and nothing
// counts it or fails it.
void** __cudaRegisterFatBinary(void* fatCubin) {
  auto* module = new Module{fatCubin};
  return &module->fat_binary;
}

void __cudaRegisterFatBinaryEnd(void**) {}

void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  // The kernels stay known: a static cudaKernel_t of the module's launch code may outlive it.
  delete reinterpret_cast<Module*>(fatCubinHandle);
}

// __device__ variables are registered and not backed: the double has no symbol table
// (cudaMemcpyToSymbol, cudaGetSymbolAddress are not modelled).
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}

char __cudaInitModule(void**) {
  return 1;
}

void __cudaRegisterFunction(void**, const char* hostFun, char*, const char* deviceName, int, uint3*,
                            uint3*, dim3*, dim3*, int*) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  Kernel& k = kernel_of(hostFun);
  if (deviceName)
    k.name = deviceName;
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st* stream) {
  configurations.push_back({gridDim, blockDim, sharedMem, stream});
  return 0; // 0: the launch goes ahead
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                       void* stream) {
  if (configurations.empty())
    return cudaErrorMissingConfiguration;
  const Configuration c = configurations.back();
  configurations.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (!kernel || !hostFun)
    return cudaErrorInvalidValue;
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  *kernel = &kernel_of(hostFun).handle;
  return cudaSuccess;
}

// <<<...>>> launches, counted and fault-injected as cudaLaunchKernel.
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream) {
  return api("cudaLaunchKernel", [&] {
    return launch(known_handle(kernel), gridDim, blockDim, args, sharedMem, stream);
  });
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream) {
  return __cudaLaunchKernel(kernel, gridDim, blockDim, args, sharedMem,
                            stream ? stream : cudaStreamPerThread);
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  return api(__func__, [&] {
    if (!func)
      return cudaErrorInvalidDeviceFunction;
    return launch(&kernel_of(func), gridDim, blockDim, args, sharedMem, stream);
  });
}

cudaError_t cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  return api(__func__, [&] {
    if (!kernelPtr || !entryFuncAddr)
      return cudaErrorInvalidValue;
    *kernelPtr = &kernel_of(entryFuncAddr).handle;
    return cudaSuccess;
  });
}

cudaError_t cudaFuncGetName(const char** name, const void* func) {
  return api(__func__, [&] {
    if (!name || !func)
      return cudaErrorInvalidValue;
    auto it = registry().find(func);
    if (it == registry().end() || it->second->name.empty())
      return cudaErrorInvalidDeviceFunction;
    *name = it->second->name.c_str();
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const cudaKernelNodeParams* pNodeParams) {
  return api(__func__, [&] {
    if (cudaError_t e = check_add_node(pGraphNode, graph, pDependencies, numDependencies))
      return e;
    std::unique_ptr<KernelCall> call;
    if (cudaError_t e = call_from_params(pNodeParams, call))
      return e;
    CUgraphNode_st* n =
        add_node(graph, cudaGraphNodeTypeKernel, pDependencies, nullptr, numDependencies);
    n->kernel = std::move(call);
    *pGraphNode = n;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* pNodeParams) {
  return api(__func__, [&] {
    return with_kernel_node(node, [&](CUgraphNode_st& n) {
      if (!pNodeParams)
        return cudaErrorInvalidValue;
      const KernelCall& call = *n.kernel;
      *pNodeParams = cudaKernelNodeParams{};
      pNodeParams->func = const_cast<void*>(call.kernel->stub);
      pNodeParams->gridDim = call.grid;
      pNodeParams->blockDim = call.block;
      pNodeParams->sharedMemBytes = call.shared_bytes;
      pNodeParams->kernelParams = const_cast<void**>(call.params.data());
      return cudaSuccess;
    });
  });
}

// The launch attributes a kernel node keeps (cluster shape, cooperative, priority, ...): what
// cudaLaunchKernelEx gave it or was set since. An attribute never given reads as zero.
cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
  return api(__func__, [&] {
    return with_kernel_node(hSrc, [&](CUgraphNode_st& source) {
      return with_kernel_node(hDst, [&](CUgraphNode_st& target) {
        target.kernel->attributes = source.kernel->attributes;
        return cudaSuccess;
      });
    });
  });
}

cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaLaunchAttributeID attr,
                                            cudaLaunchAttributeValue* value_out) {
  return api(__func__, [&] {
    return with_kernel_node(hNode, [&](CUgraphNode_st& n) {
      if (!value_out)
        return cudaErrorInvalidValue;
      *value_out = cudaLaunchAttributeValue{};
      for (const cudaLaunchAttribute& a : n.kernel->attributes) {
        if (a.id == attr)
          *value_out = a.val;
      }
      return cudaSuccess;
    });
  });
}

cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaLaunchAttributeID attr,
                                            const cudaLaunchAttributeValue* value) {
  return api(__func__, [&] {
    return with_kernel_node(hNode, [&](CUgraphNode_st& n) {
      if (!value)
        return cudaErrorInvalidValue;
      set_attribute(n.kernel->attributes, attr, *value);
      return cudaSuccess;
    });
  });
}

// cudaLaunchKernelEx (a template of cuda_runtime.h) calls this: the launch with its attributes,
// which a kernel node captured from it keeps.
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return api(__func__, [&] {
    if (!config)
      return cudaErrorInvalidValue;
    if (!func)
      return cudaErrorInvalidDeviceFunction;
    if (config->numAttrs > 0 && !config->attrs)
      return cudaErrorInvalidValue;
    return launch(&kernel_of(func), config->gridDim, config->blockDim, args,
                  config->dynamicSmemBytes, config->stream, config->attrs, config->numAttrs);
  });
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                         const cudaKernelNodeParams* pNodeParams) {
  return api(__func__, [&] {
    return with_kernel_node(node, [&](CUgraphNode_st& n) {
      std::unique_ptr<KernelCall> call;
      if (cudaError_t e = call_from_params(pNodeParams, call))
        return e;
      call->attributes = n.kernel->attributes; // a node keeps its launch attributes
      n.kernel = std::move(call);
      return cudaSuccess;
    });
  });
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const cudaKernelNodeParams* pNodeParams) {
  return api(__func__, [&] {
    if (!is_live_exec(hGraphExec))
      return cudaErrorInvalidValue;
    return with_kernel_node(node, [&](CUgraphNode_st& original) {
      CUgraphNode_st* copy = exec_counterpart(*hGraphExec, original);
      if (!copy || copy->type != cudaGraphNodeTypeKernel)
        return cudaErrorInvalidValue;
      std::unique_ptr<KernelCall> call;
      if (cudaError_t e = call_from_params(pNodeParams, call))
        return e;
      call->attributes = copy->kernel->attributes; // the executable keeps its launch attributes
      copy->kernel = std::move(call);
      return cudaSuccess;
    });
  });
}

} // extern "C"
