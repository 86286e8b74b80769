// Probe (not a benchmark): what rebinding an executable's inputs costs and where CUDA stops it.
// 1. A 200-kernel graph with 8 kernels reading other buffers: the per-node cost of
//    cudaGraphExecKernelNodeSetParams, cudaGraphExecNodeSetParams, the template's
//    cudaGraphKernelNodeSetParams, cudaGraphKernelNodeGetParams and cudaGraphNodeSetEnabled.
// 2. A conditional (IF) node whose body holds a kernel: may the executable's body node be patched
//    (cudaGraphExecKernelNodeSetParams on the body's node), and does the patch take effect?
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <vector>

__global__ void add_one(float* x) {
  x[threadIdx.x] += 1.0f;
}

static const char* name(cudaError_t e) {
  return cudaGetErrorName(e);
}

template <class F>
static double per_call_us(int calls, F&& f) {
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      f(i);
    auto t1 = std::chrono::steady_clock::now();
    const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
    best = us < best ? us : best;
  }
  return best;
}

int main() {
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float* main_buf = nullptr;
  cudaMalloc(&main_buf, 256 * sizeof(float));
  std::vector<float*> a(8), b(8);
  for (int i = 0; i < 8; ++i) {
    cudaMalloc(&a[i], 256 * sizeof(float));
    cudaMalloc(&b[i], 256 * sizeof(float));
  }
  cudaGraph_t g = nullptr;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int k = 0; k < 200; ++k) {
    add_one<<<1, 32, 0, s>>>(k % 25 == 0 ? a[k / 25] : main_buf);
  }
  cudaStreamEndCapture(s, &g);
  cudaGraphExec_t e = nullptr;
  cudaGraphInstantiate(&e, g, 0);
  size_t n = 0;
  cudaGraphGetNodes(g, nullptr, &n);
  std::vector<cudaGraphNode_t> nodes(n);
  cudaGraphGetNodes(g, nodes.data(), &n);
  std::vector<cudaGraphNode_t> targets;
  std::vector<cudaKernelNodeParams> base(8);
  for (cudaGraphNode_t node : nodes) {
    cudaKernelNodeParams p{};
    cudaGraphKernelNodeGetParams(node, &p);
    float* arg = *static_cast<float**>(p.kernelParams[0]);
    for (int i = 0; i < 8; ++i) {
      if (arg == a[i]) {
        base[targets.size()] = p;
        targets.push_back(node);
      }
    }
  }
  std::printf("nodes %zu, targets %zu\n", n, targets.size());
  std::vector<float*> slot(8);
  std::vector<void*> argv(8);
  std::vector<cudaKernelNodeParams> params(8);
  for (int i = 0; i < 8; ++i) {
    params[i] = base[i];
    argv[i] = &slot[i];
    params[i].kernelParams = &argv[i];
  }
  auto set_exec = [&](int it) {
    for (int i = 0; i < 8; ++i) {
      slot[i] = (it & 1) ? b[i] : a[i];
      cudaGraphExecKernelNodeSetParams(e, targets[i], &params[i]);
    }
  };
  auto set_template = [&](int it) {
    for (int i = 0; i < 8; ++i) {
      slot[i] = (it & 1) ? b[i] : a[i];
      cudaGraphKernelNodeSetParams(targets[i], &params[i]);
    }
  };
  auto set_generic = [&](int it) {
    for (int i = 0; i < 8; ++i) {
      slot[i] = (it & 1) ? b[i] : a[i];
      cudaGraphNodeParams gp{};
      gp.type = cudaGraphNodeTypeKernel;
      gp.kernel.func = params[i].func;
      gp.kernel.gridDim = params[i].gridDim;
      gp.kernel.blockDim = params[i].blockDim;
      gp.kernel.sharedMemBytes = params[i].sharedMemBytes;
      gp.kernel.kernelParams = params[i].kernelParams;
      cudaGraphExecNodeSetParams(e, targets[i], &gp);
    }
  };
  auto get_params = [&](int) {
    for (int i = 0; i < 8; ++i) {
      cudaKernelNodeParams p{};
      cudaGraphKernelNodeGetParams(targets[i], &p);
    }
  };
  auto toggle = [&](int it) {
    for (int i = 0; i < 8; ++i)
      cudaGraphNodeSetEnabled(e, targets[i], (it & 1) ? 0u : 1u);
  };
  auto launch = [&](int) { cudaGraphLaunch(e, s); };
  for (int round = 0; round < 2; ++round) {
    std::printf(
        "round %d: exec set 8 nodes %.3f us, generic exec set %.3f us, template set %.3f us, "
        "get params %.3f us, set enabled %.3f us, launch %.3f us\n",
        round, per_call_us(2000, set_exec), per_call_us(2000, set_generic),
        per_call_us(2000, set_template), per_call_us(2000, get_params), per_call_us(2000, toggle),
        per_call_us(2000, launch));
    cudaStreamSynchronize(s);
  }
  std::printf("last error after timing: %s\n", name(cudaGetLastError()));
  // Exec update from the template (what recapture's update path pays without the capture).
  cudaGraphExecUpdateResultInfo info{};
  auto t0 = std::chrono::steady_clock::now();
  cudaError_t up = cudaGraphExecUpdate(e, g, &info);
  auto t1 = std::chrono::steady_clock::now();
  std::printf("exec update (200 nodes): %s, %.1f us\n", name(up),
              std::chrono::duration<double, std::micro>(t1 - t0).count());

  // 2. Conditional body node.
  cudaGraph_t cg = nullptr;
  cudaGraphCreate(&cg, 0);
  cudaGraphConditionalHandle handle{};
  std::printf("handle create: %s\n",
              name(cudaGraphConditionalHandleCreate(&handle, cg, 1, cudaGraphCondAssignDefault)));
  cudaGraphNodeParams cp{};
  cp.type = cudaGraphNodeTypeConditional;
  cp.conditional.handle = handle;
  cp.conditional.type = cudaGraphCondTypeIf;
  cp.conditional.size = 1;
  cudaGraphNode_t cond = nullptr;
  std::printf("add conditional: %s\n", name(cudaGraphAddNode(&cond, cg, nullptr, nullptr, 0, &cp)));
  cudaGraph_t body = cp.conditional.phGraph_out[0];
  float* target = a[0];
  void* kargs[] = {&target};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(&add_one);
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(32);
  kp.kernelParams = kargs;
  cudaGraphNode_t body_kernel = nullptr;
  std::printf("add body kernel: %s\n",
              name(cudaGraphAddKernelNode(&body_kernel, body, nullptr, 0, &kp)));
  cudaGraphExec_t ce = nullptr;
  std::printf("instantiate: %s\n", name(cudaGraphInstantiate(&ce, cg, 0)));
  cudaMemset(a[0], 0, 256 * sizeof(float));
  cudaMemset(b[0], 0, 256 * sizeof(float));
  target = b[0];
  cudaError_t patched = cudaGraphExecKernelNodeSetParams(ce, body_kernel, &kp);
  std::printf("exec set params on a body node: %s\n", name(patched));
  cudaGetLastError();
  cudaGraphNodeParams gp{};
  gp.type = cudaGraphNodeTypeKernel;
  gp.kernel.func = kp.func;
  gp.kernel.gridDim = kp.gridDim;
  gp.kernel.blockDim = kp.blockDim;
  gp.kernel.kernelParams = kp.kernelParams;
  std::printf("generic exec set params on a body node: %s\n",
              name(cudaGraphExecNodeSetParams(ce, body_kernel, &gp)));
  cudaGetLastError();
  std::printf("set enabled on a body node: %s\n",
              name(cudaGraphNodeSetEnabled(ce, body_kernel, 1)));
  cudaGetLastError();
  std::printf("launch: %s\n", name(cudaGraphLaunch(ce, s)));
  cudaStreamSynchronize(s);
  float va = -1, vb = -1;
  cudaMemcpy(&va, a[0], sizeof va, cudaMemcpyDeviceToHost);
  cudaMemcpy(&vb, b[0], sizeof vb, cudaMemcpyDeviceToHost);
  std::printf("after launch: old buffer %.0f, new buffer %.0f (the patch %s)\n", va, vb,
              vb == 1.0f ? "took effect" : "did not take effect");
  std::printf("set enabled on the conditional node: %s\n",
              name(cudaGraphNodeSetEnabled(ce, cond, 0)));
  cudaGetLastError();
  // 3. After cudaGraphExecUpdate from a second capture (what recapture() does), may the second
  //    graph's node handles name the executable's nodes? With the first graph destroyed?
  {
    float* p1 = a[1];
    float* p2 = b[1];
    cudaGraph_t g1 = nullptr, g2 = nullptr;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    add_one<<<1, 32, 0, s>>>(p1);
    cudaStreamEndCapture(s, &g1);
    cudaGraphExec_t ue = nullptr;
    cudaGraphInstantiate(&ue, g1, 0);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    add_one<<<1, 32, 0, s>>>(p1);
    cudaStreamEndCapture(s, &g2);
    cudaGraphExecUpdateResultInfo ui{};
    std::printf("update from a second capture: %s\n", name(cudaGraphExecUpdate(ue, g2, &ui)));
    cudaGraphDestroy(g1);
    size_t one = 1;
    cudaGraphNode_t n2 = nullptr;
    cudaGraphGetNodes(g2, &n2, &one);
    cudaKernelNodeParams p{};
    cudaGraphKernelNodeGetParams(n2, &p);
    float* arg = p2;
    void* args2[] = {&arg};
    p.kernelParams = args2;
    cudaMemset(p1, 0, 256 * sizeof(float));
    cudaMemset(p2, 0, 256 * sizeof(float));
    cudaError_t st = cudaGraphExecKernelNodeSetParams(ue, n2, &p);
    std::printf("exec set params with the second graph's node (first destroyed): %s\n", name(st));
    cudaGetLastError();
    cudaGraphLaunch(ue, s);
    cudaStreamSynchronize(s);
    float v1 = -1, v2 = -1;
    cudaMemcpy(&v1, p1, sizeof v1, cudaMemcpyDeviceToHost);
    cudaMemcpy(&v2, p2, sizeof v2, cudaMemcpyDeviceToHost);
    std::printf("after launch: old %.0f, new %.0f\n", v1, v2);
  }
  std::printf("last error: %s\n", name(cudaGetLastError()));
  return 0;
}
