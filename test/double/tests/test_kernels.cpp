// Kernels on the double: nvcc's registration and launch calls, made here by hand as nvcc's
// generated host code makes them (these tests are C++: no nvcc in the sanitizer build), host
// models, kernel nodes, their driver queries and executable updates.
#include <cuda_double/kernels.hpp>

#include <cuda.h>

#include <string>

#include "helpers.hpp"

extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaUnregisterFatBinary(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                            dim3* bDim, dim3* gDim, int* wSize);
char __cudaInitModule(void** fatCubinHandle);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                       void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream);
}

namespace {

// Host stubs of "kernels": their bodies never run, only their models do.
void scale(float*, int, float) {}
void mixed(char, double*, int) {}
void other(float*, int, float) {}
void never_modelled(int*) {}

// Registers the stubs as nvcc's module constructor does, once per process.
void register_module() {
  static void** module = [] {
    static char fat_binary[16];
    void** handle = __cudaRegisterFatBinary(fat_binary);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&scale), nullptr, "_Z5scalePfif",
                           -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&mixed), nullptr, "_Z5mixedcPdi",
                           -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&never_modelled), nullptr,
                           "_Z14never_modelledPi", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(handle);
    return handle;
  }();
  CHECK(__cudaInitModule(module) == 1);
}

// A model of `scale` that also shows it gets copies: it changes its own `f`.
void model_scale() {
  cuda_double::emulate_kernel(&scale, [](float* x, int n, float f) {
    for (int i = 0; i < n; ++i)
      x[i] *= f;
    f = 0;
  });
}

// <<<grid, block, 0, stream>>>(args...) as nvcc expands it.
template <class... Args>
cudaError_t chevron_launch(void (*kernel)(Args...), dim3 grid, dim3 block, cudaStream_t stream,
                           Args... args) {
  if (__cudaPushCallConfiguration(grid, block, 0, stream) != 0)
    return cudaErrorUnknown;
  static cudaKernel_t handle = nullptr;
  if (__cudaGetKernel(&handle, reinterpret_cast<const void*>(kernel)) != cudaSuccess)
    return cudaErrorUnknown;
  dim3 g, b;
  std::size_t shared = 1;
  cudaStream_t s = nullptr;
  if (__cudaPopCallConfiguration(&g, &b, &shared, &s) != cudaSuccess)
    return cudaErrorUnknown;
  void* pointers[] = {static_cast<void*>(&args)...};
  return __cudaLaunchKernel(handle, g, b, pointers, shared, s);
}

float* device_floats(std::size_t n, float value) {
  auto* p = static_cast<float*>(device_alloc(n * sizeof(float)));
  for (std::size_t i = 0; i < n; ++i)
    p[i] = value; // the double's device memory is host memory
  return p;
}

template <class T>
T driver_function(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUDA_OK(cudaGetDriverEntryPointByVersion(symbol, &fn, 13000, 0, &q));
  REQUIRE(q == cudaDriverEntryPointSuccess);
  return reinterpret_cast<T>(fn);
}

} // namespace

TEST_CASE("kernels registered by nvcc's start-up code are known by name", "[kernel]") {
  Clean clean;
  register_module();
  CHECK(cuda_double::kernel_name(reinterpret_cast<const void*>(&scale)) == "_Z5scalePfif");
  const char* name = nullptr;
  CUDA_OK(cudaFuncGetName(&name, reinterpret_cast<const void*>(&mixed)));
  CHECK(std::string{name} == "_Z5mixedcPdi");
  CHECK(cudaFuncGetName(&name, reinterpret_cast<const void*>(&other)) ==
        cudaErrorInvalidDeviceFunction); // never registered

  // The configuration <<<...>>> pushes is the one its launch pops, once.
  cudaStream_t stream = make_stream();
  CHECK(__cudaPushCallConfiguration(dim3(3, 2), dim3(64), 128, stream) == 0);
  dim3 grid, block;
  std::size_t shared = 0;
  cudaStream_t popped = nullptr;
  CUDA_OK(__cudaPopCallConfiguration(&grid, &block, &shared, &popped));
  CHECK((grid.x == 3 && grid.y == 2 && grid.z == 1 && block.x == 64 && shared == 128));
  CHECK(popped == stream);
  CHECK(__cudaPopCallConfiguration(&grid, &block, &shared, &popped) ==
        cudaErrorMissingConfiguration);
  CUDA_OK(cudaStreamDestroy(stream));
}

TEST_CASE("a kernel with no model fails its launch and names itself", "[kernel]") {
  Clean clean;
  register_module();
  cuda_double::expect_violations(); // provoked on purpose
  int* p = nullptr;
  CHECK(chevron_launch(&never_modelled, dim3(1), dim3(1), nullptr, p) ==
        cudaErrorInvalidDeviceFunction);
  CHECK(cudaGetLastError() == cudaErrorInvalidDeviceFunction);
  const std::vector<std::string> log = cuda_double::violations();
  REQUIRE(log.size() == 1);
  CHECK(log[0].find("never_modelled(int*)") != std::string::npos); // demangled
  CHECK(log[0].find("cuda_double::emulate_kernel") != std::string::npos);
  void* args[] = {&p};
  CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(&never_modelled), dim3(1), dim3(1), args, 0,
                         nullptr) == cudaErrorInvalidDeviceFunction);
  CHECK(cuda_double::calls("cudaLaunchKernel") == 2); // <<<...>>> counts as cudaLaunchKernel
  cuda_double::clear_violations();
}

TEST_CASE("an emulated kernel runs at once on copies of its arguments", "[kernel]") {
  Clean clean;
  register_module();
  model_scale();
  float* x = device_floats(4, 1.5f);
  float f = 2.0f;
  CUDA_OK(chevron_launch(&scale, dim3(1), dim3(32), nullptr, x, 4, f));
  CHECK(x[0] == 3.0f);
  CHECK(x[3] == 3.0f);
  CHECK(f == 2.0f);
  int n = 2;
  void* args[] = {&x, &n, &f};
  CUDA_OK(cudaLaunchKernel(reinterpret_cast<const void*>(&scale), dim3(1), dim3(1), args, 0,
                           cudaStreamPerThread));
  CHECK(x[0] == 6.0f);
  CHECK(x[1] == 6.0f);
  CHECK(x[2] == 3.0f); // n == 2: only two scaled
  CHECK(cuda_double::kernel_runs(&scale) == 2);

  // The model may take the launch's shape.
  dim3 seen_grid, seen_block;
  cuda_double::emulate_kernel(&scale, [&](float*, int, float, dim3 grid, dim3 block) {
    seen_grid = grid;
    seen_block = block;
  });
  CUDA_OK(chevron_launch(&scale, dim3(5, 4, 3), dim3(8, 2), nullptr, x, 4, f));
  CHECK((seen_grid.x == 5 && seen_grid.y == 4 && seen_grid.z == 3));
  CHECK((seen_block.x == 8 && seen_block.y == 2 && seen_block.z == 1));
  CHECK(chevron_launch(&scale, dim3(1), dim3(2048), nullptr, x, 4, f) ==
        cudaErrorInvalidConfiguration);
  CHECK(chevron_launch(&scale, dim3(0), dim3(1), nullptr, x, 4, f) ==
        cudaErrorInvalidConfiguration);
  CHECK(cuda_double::kernel_runs(&scale) == 3);
  CUDA_OK(cudaFree(x));
}

TEST_CASE("a kernel model may not call the runtime, and may fail its launch", "[kernel]") {
  Clean clean;
  register_module();
  cudaError_t inner = cudaSuccess;
  cuda_double::emulate_kernel(&scale, [&](float*, int, float) {
    void* p = nullptr;
    inner = cudaMalloc(&p, 16);
  });
  CUDA_OK(chevron_launch(&scale, dim3(1), dim3(1), nullptr, static_cast<float*>(nullptr), 0, 0.f));
  CHECK(inner == cudaErrorNotPermitted);
  cuda_double::emulate_kernel(&scale, [](float*, int, float) { throw 42; });
  CHECK(chevron_launch(&scale, dim3(1), dim3(1), nullptr, static_cast<float*>(nullptr), 0, 0.f) ==
        cudaErrorLaunchFailure);
  cuda_double::clear_kernel_models();
  cuda_double::expect_violations(); // provoked on purpose: the model is gone
  CHECK(chevron_launch(&scale, dim3(1), dim3(1), nullptr, static_cast<float*>(nullptr), 0, 0.f) ==
        cudaErrorInvalidDeviceFunction);
  cuda_double::clear_violations();
}

TEST_CASE("a captured kernel becomes a node that keeps its arguments", "[kernel][graph]") {
  Clean clean;
  register_module();
  model_scale();
  float* x = device_floats(8, 1.0f);
  cudaStream_t stream = make_stream();
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  float f = 3.0f;
  CUDA_OK(chevron_launch(&scale, dim3(2), dim3(4), stream, x, 8, f));
  f = 100.0f; // the node copied the value at the launch
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CHECK(cuda_double::kernel_runs(&scale) == 0); // captured, not run
  CHECK(x[0] == 1.0f);
  CHECK(cuda_double::live_kernel_arguments() == 1);

  const std::vector<cudaGraphNode_t> nodes = graph_nodes(graph);
  REQUIRE(nodes.size() == 1);
  cudaGraphNodeType type{};
  CUDA_OK(cudaGraphNodeGetType(nodes[0], &type));
  CHECK(type == cudaGraphNodeTypeKernel);
  cudaKernelNodeParams params{};
  CUDA_OK(cudaGraphKernelNodeGetParams(nodes[0], &params));
  CHECK(params.func == reinterpret_cast<void*>(&scale));
  CHECK((params.gridDim.x == 2 && params.blockDim.x == 4));
  REQUIRE(params.kernelParams != nullptr);
  CHECK(*static_cast<float**>(params.kernelParams[0]) == x);
  CHECK(*static_cast<int*>(params.kernelParams[1]) == 8);
  CHECK(*static_cast<float*>(params.kernelParams[2]) == 3.0f);

  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cuda_double::live_kernel_arguments() == 2); // the executable's own copy
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CHECK(x[0] == 9.0f);
  CHECK(x[7] == 9.0f);
  CHECK(cuda_double::kernel_runs(&scale) == 2);
  CUDA_OK(cudaGraphDestroy(graph));
  CHECK(cuda_double::live_kernel_arguments() == 1);
  CUDA_OK(cudaGraphLaunch(exec, stream)); // the executable needs its graph no more
  CHECK(x[0] == 27.0f);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CHECK(cuda_double::live_kernel_arguments() == 0);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(x));
}

TEST_CASE("kernel nodes through the driver: parameters, layout, name", "[kernel][driver]") {
  Clean clean;
  register_module();
  double seen = 0;
  cuda_double::emulate_kernel(&mixed, [&](char, double* d, int) { seen = *d; });
  auto* d = static_cast<double*>(device_alloc(sizeof(double)));
  *d = 2.5;
  cudaGraph_t graph = make_graph();
  char c = 'c';
  int i = 7;
  void* args[] = {&c, &d, &i};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(&mixed);
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CUDA_OK(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &kp));

  using get_params_t = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2*);
  using param_info_t = CUresult (*)(CUfunction, std::size_t, std::size_t*, std::size_t*);
  using name_t = CUresult (*)(const char**, CUfunction);
  using kernel_function_t = CUresult (*)(CUfunction*, CUkernel);
  auto get_params = driver_function<get_params_t>("cuGraphKernelNodeGetParams");
  auto param_info = driver_function<param_info_t>("cuFuncGetParamInfo");
  auto get_name = driver_function<name_t>("cuFuncGetName");
  auto kernel_function = driver_function<kernel_function_t>("cuKernelGetFunction");
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  REQUIRE(get_params(node, &params) == CUDA_SUCCESS);
  REQUIRE(params.func != nullptr);
  CUfunction from_kernel = nullptr;
  CHECK(kernel_function(&from_kernel, params.kern) == CUDA_SUCCESS);
  CHECK(from_kernel == params.func);
  // The device's parameter block: each at its alignment.
  const std::size_t expected[][2] = {{0, 1}, {8, 8}, {16, 4}};
  for (std::size_t p = 0; p < 3; ++p) {
    std::size_t offset = 99, size = 99;
    REQUIRE(param_info(params.func, p, &offset, &size) == CUDA_SUCCESS);
    CHECK(offset == expected[p][0]);
    CHECK(size == expected[p][1]);
  }
  std::size_t offset = 0, size = 0;
  CHECK(param_info(params.func, 3, &offset, &size) == CUDA_ERROR_INVALID_VALUE); // past the last
  CHECK(*static_cast<double**>(params.kernelParams[1]) == d);
  const char* name = nullptr;
  CHECK(get_name(&name, params.func) == CUDA_SUCCESS);
  CHECK(std::string{name} == "_Z5mixedcPdi");
  CHECK(cuda_double::calls("cuFuncGetParamInfo") == 4);

  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(seen == 2.5);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaFree(d));
}

TEST_CASE("cudaGraphExecUpdate of kernel nodes", "[kernel][graph][update]") {
  Clean clean;
  register_module();
  model_scale();
  cuda_double::emulate_kernel(&other, [](float* x, int n, float f) {
    for (int i = 0; i < n; ++i)
      x[i] += f;
  });
  float* x = device_floats(2, 1.0f);
  cudaStream_t stream = make_stream();
  auto capture = [&](void (*kernel)(float*, int, float), float f) {
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CUDA_OK(chevron_launch(kernel, dim3(1), dim3(1), stream, x, 2, f));
    cudaGraph_t g = nullptr;
    CUDA_OK(cudaStreamEndCapture(stream, &g));
    return g;
  };
  cudaGraph_t first = capture(&scale, 2.0f);
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, first, 0));
  CUDA_OK(cudaGraphDestroy(first));

  // The same kernel with new arguments.
  cudaGraph_t second = capture(&scale, 5.0f);
  cudaGraphExecUpdateResultInfo info{};
  CUDA_OK(cudaGraphExecUpdate(exec, second, &info));
  CHECK(info.result == cudaGraphExecUpdateSuccess);
  CUDA_OK(cudaGraphDestroy(second));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CHECK(x[0] == 5.0f);

  // Another function of the same device: CUDA 13 documents it as updatable.
  cudaGraph_t third = capture(&other, 1.0f);
  CUDA_OK(cudaGraphExecUpdate(exec, third, &info));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CHECK(x[0] == 6.0f);

  // A memset where the kernel was: the node's type changed.
  cudaGraph_t fourth = make_graph();
  cudaGraphNode_t memset_node = nullptr;
  cudaMemsetParams mp{x, 0, 0, 4, 2, 1};
  CUDA_OK(cudaGraphAddMemsetNode(&memset_node, fourth, nullptr, 0, &mp));
  CHECK(cudaGraphExecUpdate(exec, fourth, &info) == cudaErrorGraphExecUpdateFailure);
  CHECK(info.result == cudaGraphExecUpdateErrorNodeTypeChanged);
  CHECK(info.errorNode == memset_node);

  // One node's arguments, in the executable only.
  const std::vector<cudaGraphNode_t> nodes = graph_nodes(third);
  float f = 10.0f;
  int n = 1;
  void* args[] = {&x, &n, &f};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(&other);
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.kernelParams = args;
  // `exec` was made from `first`: a node of `third` is not one of its nodes.
  CHECK(cudaGraphExecKernelNodeSetParams(exec, nodes[0], &kp) == cudaErrorInvalidValue);
  cudaGraphExec_t exec3 = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec3, third, 0));
  CUDA_OK(cudaGraphExecKernelNodeSetParams(exec3, nodes[0], &kp));
  CUDA_OK(cudaGraphLaunch(exec3, stream));
  CHECK(x[0] == 16.0f);
  CHECK(x[1] == 6.0f); // n == 1
  cudaKernelNodeParams kept{};
  CUDA_OK(cudaGraphKernelNodeGetParams(nodes[0], &kept));
  CHECK(*static_cast<float*>(kept.kernelParams[2]) == 1.0f); // the graph's node is unchanged

  CUDA_OK(cudaGraphExecDestroy(exec3));
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(third));
  CUDA_OK(cudaGraphDestroy(fourth));
  CHECK(cuda_double::live_kernel_arguments() == 0);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(x));
}
