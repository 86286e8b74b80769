// Probe (kept, issue #47): which kernel launch attributes cudaGraphExecUpdate ignores. For each
// attribute, one kernel is captured twice with cudaLaunchKernelEx, the attribute set to value A in
// the first capture and B in the second; the executable of the A capture is updated from the B
// template. The probe prints the update's result and, where the kernel can see the attribute
// (cluster shape, cooperative launch), what the updated executable runs with, next to a fresh
// instantiation of B. "ignored" means: the update reports success and the executable keeps A.
//
//   nvcc -std=c++20 -arch=sm_90 -o exec_update_attributes exec_update_attributes.cu
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>

namespace cg = cooperative_groups;

// Writes what the launch looked like from inside: blocks per cluster, and whether the grid is a
// cooperative one.
__global__ void report(int* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned ranks = 0;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));
    out[0] = static_cast<int>(ranks);
    out[1] = cg::this_grid().is_valid() ? 1 : 0;
  }
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t s_ = (call);                                                                       \
    if (s_ != cudaSuccess) {                                                                       \
      std::printf("  %s -> %s\n", #call, cudaGetErrorName(s_));                                    \
      static_cast<void>(cudaGetLastError());                                                       \
      return false;                                                                                \
    }                                                                                              \
  } while (0)

static const char* result_name(cudaGraphExecUpdateResult r) {
  switch (r) {
  case cudaGraphExecUpdateSuccess:
    return "Success";
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
    return "Error";
  }
}

static bool capture(cudaStream_t stream, const cudaLaunchAttribute* attribute, int* out,
                    cudaGraph_t& graph) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(2);
  config.blockDim = dim3(32);
  config.stream = stream;
  config.attrs = const_cast<cudaLaunchAttribute*>(attribute);
  config.numAttrs = attribute != nullptr ? 1 : 0;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const cudaError_t launched = cudaLaunchKernelEx(&config, report, out);
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  CHECK(launched);
  CHECK(ended);
  return true;
}

static bool run(cudaGraphExec_t exec, cudaStream_t stream, int* out, int (&host)[2]) {
  CHECK(cudaMemsetAsync(out, 0xff, 2 * sizeof(int), stream));
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaMemcpyAsync(host, out, sizeof host, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  return true;
}

// One case: capture with a, capture with b, update a's executable from b's template.
static bool probe(const char* name, const cudaLaunchAttribute* a, const cudaLaunchAttribute* b,
                  cudaStream_t stream, int* out) {
  cudaGraph_t graph_a = nullptr;
  cudaGraph_t graph_b = nullptr;
  std::printf("%s\n", name);
  if (!capture(stream, a, out, graph_a) || !capture(stream, b, out, graph_b)) {
    return false;
  }
  cudaGraphExec_t exec_a = nullptr;
  cudaGraphExec_t exec_b = nullptr;
  CHECK(cudaGraphInstantiate(&exec_a, graph_a, 0));
  CHECK(cudaGraphInstantiate(&exec_b, graph_b, 0));
  int seen_a[2], seen_b[2], seen_updated[2];
  if (!run(exec_a, stream, out, seen_a) || !run(exec_b, stream, out, seen_b)) {
    return false;
  }
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t status = cudaGraphExecUpdate(exec_a, graph_b, &info);
  static_cast<void>(cudaGetLastError());
  std::printf("  update A -> B: %s (%s)\n", cudaGetErrorName(status), result_name(info.result));
  if (status == cudaSuccess && run(exec_a, stream, out, seen_updated)) {
    const bool visible = seen_a[0] != seen_b[0] || seen_a[1] != seen_b[1];
    std::printf("  A runs (cluster ranks %d, cooperative %d), B fresh (%d, %d), A updated (%d, %d)"
                ": %s\n",
                seen_a[0], seen_a[1], seen_b[0], seen_b[1], seen_updated[0], seen_updated[1],
                !visible ? "not visible"
                : (seen_updated[0] == seen_a[0] && seen_updated[1] == seen_a[1])
                    ? "IGNORED (keeps A)"
                    : "applied (runs B)");
  }
  cudaGraphExecDestroy(exec_a);
  cudaGraphExecDestroy(exec_b);
  cudaGraphDestroy(graph_a);
  cudaGraphDestroy(graph_b);
  return true;
}

int main() {
  cudaStream_t stream = nullptr;
  int* out = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&out, 2 * sizeof(int)) != cudaSuccess) {
    std::printf("no device\n");
    return 1;
  }
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("runtime %d, driver %d\n", runtime, driver);

  cudaLaunchAttribute a{}, b{};
  a.id = b.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim = {1, 1, 1};
  b.val.clusterDim = {2, 1, 1};
  probe("cluster dimension 1 -> 2", &a, &b, stream, out);
  probe("cluster dimension 2 -> 1", &b, &a, stream, out);
  probe("no attribute -> cluster dimension 2", nullptr, &b, stream, out);

  a.id = b.id = cudaLaunchAttributeCooperative;
  a.val.cooperative = 0;
  b.val.cooperative = 1;
  probe("cooperative 0 -> 1", &a, &b, stream, out);
  probe("cooperative 1 -> 0", &b, &a, stream, out);

  int least = 0, greatest = 0;
  cudaDeviceGetStreamPriorityRange(&least, &greatest);
  a.id = b.id = cudaLaunchAttributePriority;
  a.val.priority = least;
  b.val.priority = greatest;
  probe("priority least -> greatest (not visible to the kernel)", &a, &b, stream, out);

  a.id = b.id = cudaLaunchAttributeMemSyncDomain;
  a.val.memSyncDomain = cudaLaunchMemSyncDomainDefault;
  b.val.memSyncDomain = cudaLaunchMemSyncDomainRemote;
  probe("memory-sync domain default -> remote (not visible)", &a, &b, stream, out);

  a.id = b.id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
  a.val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicyDefault;
  b.val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
  probe("cluster scheduling policy default -> spread (not visible)", &a, &b, stream, out);

  a.id = b.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 0;
  b.val.programmaticStreamSerializationAllowed = 1;
  probe("programmatic stream serialization 0 -> 1 (one node: not visible)", &a, &b, stream, out);

  cudaFree(out);
  cudaStreamDestroy(stream);
  return 0;
}
