// test/symbols/raw.cpp - the same capture and replays written by hand against the CUDA runtime,
// as a careful program would: every call checked, failures thrown with the call's and the
// error's names, no capture left running after a failure, nothing leaked. Compiled with -O2; its
// undefined symbols are the baseline of check.sh.
#include "work.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace {

[[noreturn]] void fail(const char* call, cudaError_t status) {
  static_cast<void>(cudaGetLastError()); // leave no sticky status behind
  throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(status));
}

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    fail(call, status);
  }
}

struct raw_graph {
  cudaGraphExec_t exec = nullptr;

  raw_graph(cudaStream_t stream, void* buffer, std::size_t bytes) {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
    try {
      symbols::user_work(stream, buffer, bytes);
    } catch (...) {
      cudaGraph_t discarded = nullptr;
      if (cudaStreamEndCapture(stream, &discarded) == cudaSuccess && discarded != nullptr) {
        cudaGraphDestroy(discarded);
      }
      throw;
    }
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    const cudaError_t instantiated = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(instantiated, "cudaGraphInstantiateWithFlags");
  }
  raw_graph(const raw_graph&) = delete;
  raw_graph& operator=(const raw_graph&) = delete;
  raw_graph(raw_graph&&) = delete;
  raw_graph& operator=(raw_graph&&) = delete;
  ~raw_graph() { cudaGraphExecDestroy(exec); }

  void replay(cudaStream_t stream) const {
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  }
};

} // namespace

/// Capture the work, replay it `replays` times, destroy the graph.
void capture_and_replay(cudaStream_t stream, void* buffer, std::size_t bytes, int replays) {
  const raw_graph graph(stream, buffer, bytes);
  for (int i = 0; i < replays; ++i) {
    graph.replay(stream);
  }
}

/// The replay alone.
void replay_only(cudaGraphExec_t exec, cudaStream_t stream) {
  check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
}
