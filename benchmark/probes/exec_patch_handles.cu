// Probe (kept, docs/families.md "The patch switch"): after cudaGraphExecUpdate took an executable
// from template A (which it was instantiated from) to template B, which node handles do the exec
// set-params take: A's (the instantiating template's, what graph_family's patch switch uses) or
// B's? And does a set through A's handle after updates A -> B -> A -> B still land on the node?
// Each line: the call's status, then what one launch wrote (the value the kernel node holds).
//
//   nvcc -std=c++20 -arch=sm_90 -o exec_patch_handles exec_patch_handles.cu && ./exec_patch_handles
#include <cuda_runtime.h>

#include <cstdio>

namespace {

__global__ void write_value(int* out, int value) {
  *out = value;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorName(status));
  }
}

/// A template of one kernel node writing `value` to `out`; its node in `node`.
cudaGraph_t one_kernel(int* out, int value, cudaGraphNode_t& node) {
  cudaGraph_t graph = nullptr;
  check(cudaGraphCreate(&graph, 0), "cudaGraphCreate");
  void* args[] = {&out, &value};
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(&write_value);
  params.gridDim = dim3(1);
  params.blockDim = dim3(1);
  params.kernelParams = args;
  check(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &params), "cudaGraphAddKernelNode");
  return graph;
}

int launch_read(cudaGraphExec_t exec, int* out) {
  int seen = -1;
  check(cudaMemset(out, 0xff, sizeof(int)), "cudaMemset");
  check(cudaGraphLaunch(exec, nullptr), "cudaGraphLaunch");
  check(cudaMemcpy(&seen, out, sizeof seen, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return seen;
}

/// Sets the executable's node (through `node`) to write `value`; prints the status and the launch.
void set_through(const char* label, cudaGraphExec_t exec, cudaGraphNode_t node, int* out,
                 int value) {
  void* args[] = {&out, &value};
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(&write_value);
  params.gridDim = dim3(1);
  params.blockDim = dim3(1);
  params.kernelParams = args;
  const cudaError_t status = cudaGraphExecKernelNodeSetParams(exec, node, &params);
  const cudaError_t pending = cudaGetLastError();
  std::printf("%s: set %s (pending %s), launch wrote %d (set value %d)\n", label,
              cudaGetErrorName(status), cudaGetErrorName(pending), launch_read(exec, out), value);
}

void update(cudaGraphExec_t exec, cudaGraph_t graph, const char* label) {
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t status = cudaGraphExecUpdate(exec, graph, &info);
  std::printf("update to %s: %s\n", label, cudaGetErrorName(status));
}

} // namespace

int main() {
  int* out = nullptr;
  check(cudaMalloc(&out, sizeof(int)), "cudaMalloc");
  cudaGraphNode_t node_a = nullptr;
  cudaGraphNode_t node_b = nullptr;
  cudaGraph_t a = one_kernel(out, 1, node_a);
  cudaGraph_t b = one_kernel(out, 2, node_b);
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, a, 0), "cudaGraphInstantiate");
  std::printf("instantiated from A: launch wrote %d (A writes 1)\n", launch_read(exec, out));
  update(exec, b, "B");
  std::printf("after the update: launch wrote %d (B writes 2)\n", launch_read(exec, out));
  set_through("through A's node (the instantiating template)", exec, node_a, out, 3);
  set_through("through B's node (the template updated from)", exec, node_b, out, 4);
  update(exec, a, "A");
  update(exec, b, "B");
  set_through("after A -> B -> A -> B, through A's node", exec, node_a, out, 5);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(a);
  cudaGraphDestroy(b);
  cudaFree(out);
  return 0;
}
