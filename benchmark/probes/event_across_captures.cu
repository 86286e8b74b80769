// Probe (not a benchmark): what CUDA does with an event recorded in one capture and waited on
// in a later capture on the same stream (the piecewise bug class of vLLM #56785). Prints the
// status of each call, the node types of the second graph, and what replaying both returns.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

__global__ void touch(int* x) {
  *x += 1;
}

static const char* name(cudaError_t e) {
  return cudaGetErrorName(e);
}

int main() {
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int* x = nullptr;
  cudaMalloc(&x, sizeof(int));
  cudaEvent_t e = nullptr;
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  cudaGraph_t a = nullptr;
  cudaGraph_t b = nullptr;
  std::printf("begin A: %s\n", name(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal)));
  touch<<<1, 1, 0, s>>>(x);
  std::printf("record in A: %s\n", name(cudaEventRecord(e, s)));
  std::printf("end A: %s\n", name(cudaStreamEndCapture(s, &a)));
  std::printf("begin B: %s\n", name(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal)));
  std::printf("wait in B: %s\n", name(cudaStreamWaitEvent(s, e, 0)));
  touch<<<1, 1, 0, s>>>(x);
  std::printf("end B: %s\n", name(cudaStreamEndCapture(s, &b)));
  std::printf("last error: %s\n", name(cudaGetLastError()));
  if (b != nullptr) {
    size_t n = 0;
    cudaGraphGetNodes(b, nullptr, &n);
    std::vector<cudaGraphNode_t> nodes(n);
    cudaGraphGetNodes(b, nodes.data(), &n);
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType t;
      cudaGraphNodeGetType(node, &t);
      std::printf("B node type %d\n", static_cast<int>(t));
    }
    cudaGraphExec_t ea = nullptr;
    cudaGraphExec_t eb = nullptr;
    std::printf("instantiate A: %s\n", name(cudaGraphInstantiate(&ea, a, 0)));
    std::printf("instantiate B: %s\n", name(cudaGraphInstantiate(&eb, b, 0)));
    std::printf("launch A: %s\n", name(cudaGraphLaunch(ea, s)));
    std::printf("launch B: %s\n", name(cudaGraphLaunch(eb, s)));
    std::printf("sync: %s\n", name(cudaStreamSynchronize(s)));
  }
  return 0;
}
