// Devices, streams, events, errors, entry points and the control API.
#include <cuda.h>

#include <cstring>
#include <string>
#include <thread>

#include "helpers.hpp"

TEST_CASE("devices", "[runtime]") {
  Clean clean;
  int n = 0;
  CUDA_OK(cudaGetDeviceCount(&n));
  CHECK(n == 1);
  cuda_double::set_device_count(3);
  CUDA_OK(cudaGetDeviceCount(&n));
  CHECK(n == 3);
  CUDA_OK(cudaSetDevice(2));
  int d = -1;
  CUDA_OK(cudaGetDevice(&d));
  CHECK(d == 2);
  // The current device is per thread.
  std::thread([] {
    int other = -1;
    cudaGetDevice(&other);
    CHECK(other == 0);
  }).join();
  CHECK(cudaSetDevice(3) == cudaErrorInvalidDevice);
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaStreamGetDevice(s, &d));
  CHECK(d == 2);

  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  CHECK(prop.major == 9);
  CHECK(prop.warpSize == 32);
  int v = 0;
  CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 1));
  CHECK(v == prop.multiProcessorCount);
  CUDA_OK(cudaRuntimeGetVersion(&v));
  CHECK(v == 13000);
  CUDA_OK(cudaDriverGetVersion(&v));
  CHECK(v >= 13000);
}

TEST_CASE("last error semantics", "[runtime][errors]") {
  Clean clean;
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaSetDevice(42) == cudaErrorInvalidDevice);
  CUDA_OK(cudaGetDeviceCount(&*std::make_unique<int>())); // success does not clear
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidDevice);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidDevice);
  // Per thread.
  std::thread([] { CHECK(cudaGetLastError() == cudaSuccess); }).join();
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaSuccess);

  CHECK(std::string(cudaGetErrorName(cudaErrorStreamCaptureUnsupported)) ==
        "cudaErrorStreamCaptureUnsupported");
  CHECK(std::string(cudaGetErrorString(cudaErrorStreamCaptureUnsupported)) ==
        "operation not permitted when stream is capturing");
  CHECK(std::string(cudaGetErrorString(cudaErrorInsufficientDriver)) ==
        "CUDA driver version is insufficient for CUDA runtime version");
  CHECK(std::string(cudaGetErrorString(static_cast<cudaError_t>(12345))) ==
        "unrecognized error code");
}

TEST_CASE("no-driver mode", "[runtime][errors]") {
  Clean clean;
  cuda_double::simulate_no_driver(true);
  int n = -7;
  CHECK(cudaGetDeviceCount(&n) == cudaErrorInsufficientDriver);
  CHECK(n == -7);
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 16) == cudaErrorInsufficientDriver);
  CHECK(cudaStreamCreate(reinterpret_cast<cudaStream_t*>(&p)) == cudaErrorInsufficientDriver);
  // The initialization error is sticky.
  CHECK(cudaGetLastError() == cudaErrorInsufficientDriver);
  CHECK(cudaGetLastError() == cudaErrorInsufficientDriver);
  int v = -1;
  CUDA_OK(cudaDriverGetVersion(&v));
  CHECK(v == 0);
  CUDA_OK(cudaRuntimeGetVersion(&v));
  CHECK(v == 13000);
  cuda_double::simulate_no_driver(false);
  CUDA_OK(cudaGetDeviceCount(&n));
  CHECK(n == 1);
  CHECK(cuda_double::calls("cudaMalloc") == 1);
}

TEST_CASE("fault injection", "[runtime][control]") {
  Clean clean;
  cudaStream_t s = nullptr;
  cuda_double::fail_call("cudaStreamCreate", cudaErrorMemoryAllocation, 2);
  CUDA_OK(cudaStreamCreate(&s));
  CHECK(cuda_double::live_streams() == 1);
  cudaStream_t t = nullptr;
  CHECK(cudaStreamCreate(&t) == cudaErrorMemoryAllocation);
  CHECK(t == nullptr); // no side effects
  CHECK(cuda_double::live_streams() == 1);
  CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
  CUDA_OK(cudaStreamCreate(&t)); // fails once only
  CHECK(cuda_double::calls("cudaStreamCreate") == 3);

  void* fn = nullptr;
  // Deprecated in CUDA 13 but still declared; graphcap may use it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CUDA_OK(cudaGetDriverEntryPoint("cuPointerGetAttribute", &fn, cudaEnableDefault, nullptr));
#pragma GCC diagnostic pop
  auto get = reinterpret_cast<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>(fn);
  void* d = device_alloc(8);
  unsigned long long id = 0;
  cuda_double::fail_call("cuPointerGetAttribute",
                         static_cast<cudaError_t>(CUDA_ERROR_NOT_SUPPORTED));
  CHECK(get(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(d)) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CHECK(get(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(d)) == CUDA_SUCCESS);
}

TEST_CASE("call counters and leak counters", "[runtime][control]") {
  Clean clean;
  cudaStream_t s = nullptr;
  cudaEvent_t e = nullptr;
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaEventCreate(&e));
  CUDA_OK(cudaGraphCreate(&g, 0));
  cudaGraphExec_t x = nullptr;
  CUDA_OK(cudaGraphInstantiate(&x, g, 0));
  cuda_double::clear_call_counts();
  CUDA_OK(cudaGraphLaunch(x, s));
  CUDA_OK(cudaGraphLaunch(x, s));
  CHECK(cuda_double::calls("cudaGraphLaunch") == 2);
  CHECK(cuda_double::calls("cudaStreamCreate") == 0);
  CHECK(cuda_double::live_streams() == 1);
  CHECK(cuda_double::live_events() == 1);
  CHECK(cuda_double::live_graphs() == 1);
  CHECK(cuda_double::live_execs() == 1);
  cuda_double::reset();
  CHECK(cuda_double::live_streams() == 0);
  CHECK(cuda_double::live_events() == 0);
  CHECK(cuda_double::live_graphs() == 0);
  CHECK(cuda_double::live_execs() == 0);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
  CHECK(cudaStreamDestroy(s) == cudaErrorInvalidResourceHandle);
}

TEST_CASE("streams", "[runtime]") {
  Clean clean;
  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreateWithFlags(&s, 4) == cudaErrorInvalidValue);
  CUDA_OK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -100));
  unsigned flags = 0;
  int prio = 0;
  CUDA_OK(cudaStreamGetFlags(s, &flags));
  CHECK(flags == cudaStreamNonBlocking);
  CUDA_OK(cudaStreamGetPriority(s, &prio));
  CHECK(prio == -5);
  CUDA_OK(cudaStreamQuery(s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamSynchronize(nullptr));
  CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  CUDA_OK(cudaStreamDestroy(s));
  CHECK(cudaStreamDestroy(s) == cudaErrorInvalidResourceHandle);
  CHECK(cudaStreamDestroy(nullptr) == cudaErrorInvalidResourceHandle);
}

TEST_CASE("events and elapsed time", "[runtime]") {
  Clean clean;
  cudaEvent_t a = nullptr, b = nullptr, quiet = nullptr;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  CUDA_OK(cudaEventCreateWithFlags(&quiet, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&quiet, cudaEventInterprocess) == cudaErrorInvalidValue);
  float ms = -1;
  CUDA_OK(cudaEventQuery(a)); // never recorded: complete
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorInvalidResourceHandle);
  CUDA_OK(cudaEventRecord(a, nullptr));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CUDA_OK(cudaEventRecord(b, nullptr));
  CUDA_OK(cudaEventSynchronize(b));
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  CHECK(ms >= 4.0f);
  CUDA_OK(cudaEventRecord(quiet, nullptr));
  CHECK(cudaEventElapsedTime(&ms, a, quiet) == cudaErrorInvalidResourceHandle);
  CUDA_OK(cudaEventDestroy(a));
  CHECK(cudaEventRecord(a, nullptr) == cudaErrorInvalidResourceHandle);
}

namespace {
void call_cuda(void* out) {
  int n = 0;
  *static_cast<cudaError_t*>(out) = cudaGetDeviceCount(&n);
}
} // namespace

TEST_CASE("host functions may not call CUDA", "[runtime]") {
  Clean clean;
  cudaError_t inner = cudaSuccess;
  CUDA_OK(cudaLaunchHostFunc(cudaStreamPerThread, call_cuda, &inner));
  CHECK(inner == cudaErrorNotPermitted);
}

TEST_CASE("driver entry points", "[runtime][driver]") {
  Clean clean;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", &fn, 13000, 0, &q));
  REQUIRE(q == cudaDriverEntryPointSuccess);
  auto kernel_params = reinterpret_cast<CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*)>(fn);
  CUDA_KERNEL_NODE_PARAMS kp{};
  CHECK(kernel_params(nullptr, &kp) == CUDA_ERROR_INVALID_VALUE);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuFuncGetParamInfo", &fn, 12000, 0, &q));
  CHECK(q == cudaDriverEntryPointVersionNotSufficent);
  CHECK(fn == nullptr);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuFuncGetName", &fn, 12030, 0, &q));
  CHECK(q == cudaDriverEntryPointSuccess);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 13000, 0, &q));
  CHECK(q == cudaDriverEntryPointSymbolNotFound);
  CHECK(fn == nullptr);
  CHECK(cudaGetDriverEntryPointByVersion("cuFuncGetName", &fn, 99000, 0, &q) ==
        cudaErrorInvalidValue);
}

TEST_CASE("a hidden driver function is missing, until shown again or reset", "[runtime][driver]") {
  Clean clean;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cuda_double::hide_driver_function("cuFuncGetName");
  cuda_double::hide_driver_function("cuGraphNodeGetType", true);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuFuncGetName", &fn, 12030, 0, &q));
  CHECK(q == cudaDriverEntryPointSymbolNotFound);
  CHECK(fn == nullptr);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuGraphNodeGetType", &fn, 13000, 0, &q));
  CHECK(q == cudaDriverEntryPointVersionNotSufficent);
  CHECK(fn == nullptr);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuGraphGetNodes", &fn, 10000, 0, &q)); // the others
  CHECK(q == cudaDriverEntryPointSuccess);
  CHECK(fn != nullptr);
  CHECK(cudaGetLastError() == cudaSuccess); // a missing function is an answer, not an error
  cuda_double::show_driver_functions();
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuFuncGetName", &fn, 12030, 0, &q));
  CHECK(q == cudaDriverEntryPointSuccess);
  CHECK(fn != nullptr);
  cuda_double::hide_driver_function("cuFuncGetName");
  cuda_double::reset();
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuFuncGetName", &fn, 12030, 0, &q));
  CHECK(q == cudaDriverEntryPointSuccess);
}
