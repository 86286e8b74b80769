// Probe (kept, docs/testing.md): CUDA behaviours the test double models, read on the GPU:
// condition handles across graphs (and of a body), cudaGraphExecUpdate's pairing of dependencies,
// its memset and memcpy rules (those only documented are marked "(doc)" in the output: the double
// models them unchecked), and whether another thread's instantiation breaks a global-mode capture.
//
//   nvcc -std=c++20 -arch=sm_90 -o exec_update_rules exec_update_rules.cu && ./exec_update_rules
#include <cuda_runtime.h>

#include <cstdio>
#include <thread>

__global__ void k1(int* p) {
  if (p)
    *p = 1;
}
__global__ void k2(int* p) {
  if (p)
    *p = 2;
}

#define SAY(call)                                                                                  \
  do {                                                                                             \
    cudaError_t s_ = (call);                                                                       \
    std::printf("  %-70s -> %s\n", #call, cudaGetErrorName(s_));                                   \
    static_cast<void>(cudaGetLastError());                                                         \
  } while (0)

static const char* result_name(cudaGraphExecUpdateResult r) {
  switch (r) {
  case cudaGraphExecUpdateSuccess:
    return "Success";
  case cudaGraphExecUpdateError:
    return "Error";
  case cudaGraphExecUpdateErrorTopologyChanged:
    return "TopologyChanged";
  case cudaGraphExecUpdateErrorNodeTypeChanged:
    return "NodeTypeChanged";
  case cudaGraphExecUpdateErrorFunctionChanged:
    return "FunctionChanged";
  case cudaGraphExecUpdateErrorParametersChanged:
    return "ParametersChanged";
  case cudaGraphExecUpdateErrorNotSupported:
    return "NotSupported";
  case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
    return "UnsupportedFunctionChange";
  case cudaGraphExecUpdateErrorAttributesChanged:
    return "AttributesChanged";
  default:
    return "?";
  }
}

static void kernel_node(cudaGraph_t g, cudaGraphNode_t* out, const cudaGraphNode_t* deps,
                        std::size_t n, void* fn, int** arg) {
  cudaKernelNodeParams p{};
  p.func = fn;
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  void* args[] = {arg};
  p.kernelParams = args;
  cudaGraphAddKernelNode(out, g, deps, n, &p);
}

// Two kernels a (k1), b (k2) feeding c (k1); `swap` lists c's dependencies as (b, a).
static cudaGraph_t diamond(bool swap, int** arg) {
  cudaGraph_t g{};
  cudaGraphCreate(&g, 0);
  cudaGraphNode_t a{}, b{}, c{};
  kernel_node(g, &a, nullptr, 0, reinterpret_cast<void*>(k1), arg);
  kernel_node(g, &b, nullptr, 0, reinterpret_cast<void*>(k2), arg);
  cudaGraphNode_t deps[2] = {swap ? b : a, swap ? a : b};
  kernel_node(g, &c, deps, 2, reinterpret_cast<void*>(k1), arg);
  return g;
}

static void update(const char* what, cudaGraphExec_t exec, cudaGraph_t g) {
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t e = cudaGraphExecUpdate(exec, g, &info);
  std::printf("  update %-50s -> %s, result %s\n", what, cudaGetErrorName(e),
              result_name(info.result));
  static_cast<void>(cudaGetLastError());
}

static cudaGraph_t memset_graph(void* dst, std::size_t width, std::size_t height, std::size_t pitch,
                                unsigned element, unsigned value = 1) {
  cudaGraph_t g{};
  cudaGraphCreate(&g, 0);
  cudaMemsetParams p{};
  p.dst = dst;
  p.value = value;
  p.elementSize = element;
  p.width = width;
  p.height = height;
  p.pitch = pitch;
  cudaGraphNode_t n{};
  SAY(cudaGraphAddMemsetNode(&n, g, nullptr, 0, &p));
  return g;
}

// One 4 KiB copy node (cudaMemcpyDefault: the kinds follow the pointers).
static cudaGraph_t copy_graph(void* dst, const void* src) {
  cudaGraph_t g{};
  cudaGraphCreate(&g, 0);
  cudaGraphNode_t n{};
  SAY(cudaGraphAddMemcpyNode1D(&n, g, nullptr, 0, dst, src, 4096, cudaMemcpyDefault));
  return g;
}

int main() {
  int* arg = nullptr;
  cudaMalloc(&arg, 1 << 20);

  std::printf("== condition handles of two graphs\n");
  {
    cudaGraph_t a{}, b{};
    cudaGraphCreate(&a, 0);
    cudaGraphCreate(&b, 0);
    cudaGraphConditionalHandle ha1{}, ha2{}, hb1{}, hb2{};
    SAY(cudaGraphConditionalHandleCreate(&ha1, a, 0, 0));
    SAY(cudaGraphConditionalHandleCreate(&ha2, a, 0, 0));
    SAY(cudaGraphConditionalHandleCreate(&hb1, b, 0, 0));
    SAY(cudaGraphConditionalHandleCreate(&hb2, b, 0, 0));
    std::printf("  graph a: %llu %llu; graph b: %llu %llu\n", ha1, ha2, hb1, hb2);
    // A handle of graph a used by a conditional node of graph b.
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = ha2;
    params.conditional.type = cudaGraphCondTypeIf;
    params.conditional.size = 1;
    cudaGraphNode_t node{};
    SAY(cudaGraphAddNode(&node, b, nullptr, nullptr, 0, &params));
    cudaGraph_t c{};
    cudaGraphCreate(&c, 0);
    params.conditional.handle = ha2;
    SAY(cudaGraphAddNode(&node, c, nullptr, nullptr, 0, &params)); // c made no handles
    cudaGraphExec_t exec{};
    SAY(cudaGraphInstantiate(&exec, b, 0));
    if (exec)
      cudaGraphExecDestroy(exec);
  }

  std::printf("== condition handles of a body and of its parent\n");
  {
    // Per graph (the body's first is 1) or per root graph (it continues the parent's: 3)?
    cudaGraph_t parent{};
    cudaGraphCreate(&parent, 0);
    cudaGraphConditionalHandle p1{}, p2{}, body1{}, body2{};
    SAY(cudaGraphConditionalHandleCreate(&p1, parent, 0, 0));
    SAY(cudaGraphConditionalHandleCreate(&p2, parent, 0, 0));
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = p1;
    params.conditional.type = cudaGraphCondTypeIf;
    params.conditional.size = 1;
    cudaGraphNode_t node{};
    SAY(cudaGraphAddNode(&node, parent, nullptr, nullptr, 0, &params));
    cudaGraph_t body = params.conditional.phGraph_out[0];
    SAY(cudaGraphConditionalHandleCreate(&body1, body, 0, 0));
    SAY(cudaGraphConditionalHandleCreate(&body2, body, 0, 0));
    std::printf("  parent: %llu %llu; its body: %llu %llu\n", p1, p2, body1, body2);
    cudaGraphDestroy(parent);
  }

  std::printf("== cudaGraphExecUpdate: the same diamond, dependencies listed in another order\n");
  {
    cudaGraph_t g1 = diamond(false, &arg);
    cudaGraph_t g2 = diamond(true, &arg);
    cudaGraph_t g3 = diamond(false, &arg);
    cudaGraphExec_t exec{};
    SAY(cudaGraphInstantiate(&exec, g1, 0));
    update("same order", exec, g3);
    update("dependencies (b, a) instead of (a, b)", exec, g2);
  }

  std::printf("== cudaGraphExecUpdate of memset nodes\n");
  {
    void* dst = nullptr;
    cudaMalloc(&dst, 1 << 20);
    cudaGraph_t g = memset_graph(dst, 256, 1, 0, 4);
    cudaGraphExec_t exec{};
    SAY(cudaGraphInstantiate(&exec, g, 0));
    update("1-D, 256 -> 512 elements", exec, memset_graph(dst, 512, 1, 0, 4));
    update("1-D, element size 4 -> 1", exec, memset_graph(dst, 256, 1, 0, 1));
    update("1-D -> 2-D (height 2, pitch 1024)", exec, memset_graph(dst, 256, 2, 1024, 4));
    update("1-D, another destination in the same allocation", exec,
           memset_graph(static_cast<char*>(dst) + 4096, 256, 1, 0, 4));
    cudaGraph_t g2 = memset_graph(dst, 256, 2, 1024, 4);
    cudaGraphExec_t exec2{};
    SAY(cudaGraphInstantiate(&exec2, g2, 0));
    update("2-D -> 2-D, height 2 -> 3", exec2, memset_graph(dst, 256, 3, 1024, 4));
    update("2-D -> 1-D", exec2, memset_graph(dst, 256, 1, 0, 4));
    update("2-D, same shape", exec2, memset_graph(dst, 256, 2, 1024, 4));
    // Documented ("for 2d memsets, only address and assigned value may be updated"): not yet read.
    update("(doc) 2-D, another destination and value", exec2,
           memset_graph(static_cast<char*>(dst) + 4096, 256, 2, 1024, 4, 9));
    update("(doc) 2-D, width 256 -> 128", exec2, memset_graph(dst, 128, 2, 1024, 4));
    update("(doc) 2-D, pitch 1024 -> 2048", exec2, memset_graph(dst, 256, 2, 2048, 4));
    update("(doc) 2-D, element size 4 -> 2", exec2, memset_graph(dst, 256, 2, 1024, 2));
    void* other = nullptr;
    cudaMalloc(&other, 1 << 20);
    update("1-D, a destination in another allocation", exec, memset_graph(other, 256, 1, 0, 4));
  }

  std::printf("== cudaGraphExecUpdate of memcpy nodes (doc: memory types may not change)\n");
  {
    void* a = nullptr;
    void* b = nullptr;
    void* pinned = nullptr;
    cudaMalloc(&a, 4096);
    cudaMalloc(&b, 4096);
    cudaMallocHost(&pinned, 4096);
    cudaGraphExec_t exec{};
    SAY(cudaGraphInstantiate(&exec, copy_graph(a, b), 0));
    update("device -> device, other device buffers", exec, copy_graph(b, a));
    update("(doc) source device -> pinned host", exec, copy_graph(a, pinned));
    update("(doc) destination device -> pinned host", exec, copy_graph(pinned, b));
  }

  std::printf("== cudaGraphExecUpdate: operands on another device (doc: may not change)\n");
  {
    int devices = 0;
    cudaGetDeviceCount(&devices);
    if (devices < 2) {
      std::printf("  %d device: not probed (needs two)\n", devices);
    } else {
      void* on0 = nullptr;
      void* on1 = nullptr;
      cudaSetDevice(0);
      cudaMalloc(&on0, 1 << 20);
      cudaSetDevice(1);
      cudaMalloc(&on1, 1 << 20);
      cudaSetDevice(0);
      cudaGraphExec_t exec{};
      SAY(cudaGraphInstantiate(&exec, memset_graph(on0, 256, 1, 0, 4), 0));
      update("(doc) memset destination device 0 -> 1", exec, memset_graph(on1, 256, 1, 0, 4));
      cudaGraphExec_t copy{};
      SAY(cudaGraphInstantiate(&copy, copy_graph(on0, static_cast<char*>(on0) + 8192), 0));
      update("(doc) memcpy destination device 0 -> 1", copy,
             copy_graph(on1, static_cast<char*>(on0) + 8192));
      update("(doc) memcpy source device 0 -> 1", copy, copy_graph(on0, on1));
    }
  }

  std::printf("== another thread instantiates / destroys an executable during a global capture\n");
  for (int which = 0; which < 2; ++which) {
    cudaStream_t s{};
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t other = diamond(false, &arg);
    cudaGraphExec_t ready{};
    cudaGraphInstantiate(&ready, other, 0);
    SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k1<<<1, 1, 0, s>>>(arg);
    std::thread t([&] {
      cudaGraphExec_t exec{};
      if (which == 0) {
        SAY(cudaGraphInstantiate(&exec, other, 0));
      } else {
        SAY(cudaGraphExecDestroy(ready));
      }
      if (exec)
        cudaGraphExecDestroy(exec);
    });
    t.join();
    cudaStreamCaptureStatus st{};
    SAY(cudaStreamIsCapturing(s, &st));
    std::printf("  capture after the other thread's %s: %s\n",
                which == 0 ? "instantiate" : "exec destroy",
                st == cudaStreamCaptureStatusActive ? "active" : "invalidated or none");
    cudaGraph_t g{};
    SAY(cudaStreamEndCapture(s, &g));
    if (g)
      cudaGraphDestroy(g);
    // The same with the other thread in relaxed mode.
    SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k1<<<1, 1, 0, s>>>(arg);
    cudaGraphExec_t ready2{};
    {
      cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&m);
      cudaGraphInstantiate(&ready2, other, 0);
      cudaThreadExchangeStreamCaptureMode(&m);
    }
    std::thread t2([&] {
      cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&m);
      cudaGraphExec_t exec{};
      if (which == 0) {
        SAY(cudaGraphInstantiate(&exec, other, 0));
      } else {
        SAY(cudaGraphExecDestroy(ready2));
      }
      if (exec)
        cudaGraphExecDestroy(exec);
      cudaThreadExchangeStreamCaptureMode(&m);
    });
    t2.join();
    SAY(cudaStreamIsCapturing(s, &st));
    std::printf("  relaxed other thread: capture %s\n",
                st == cudaStreamCaptureStatusActive ? "active" : "invalidated or none");
    SAY(cudaStreamEndCapture(s, &g));
    if (g)
      cudaGraphDestroy(g);
  }
  return 0;
}
