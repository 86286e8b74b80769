// Probe (#32, goal 2): what the calls graphcap adds to a capture's whole life cost. graphcap's
// default path (capture, instantiate, destroy) makes seven calls the hand-written one does not:
// cudaGetDevice at the capture's begin, and a capture-mode exchange pair
// (cudaThreadExchangeStreamCaptureMode twice) around the instantiation and around each of the two
// destructions. This times each call alone, then the whole life of a 1-node graph three ways,
// interleaved: by hand; by hand plus those seven calls; graphcap::lean_graph.
#include <graphcap/graphcap.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

__global__ void tiny(int* sink) {
  if (threadIdx.x == 0) {
    ++*sink;
  }
}

using clock_type = std::chrono::steady_clock;

double ns_since(clock_type::time_point start, int calls) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - start).count() / calls;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("%s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// Exchanges the thread's capture mode (graphcap's relaxed_capture_mode_guard makes two such
/// calls around each capture-unsafe call) where `extra` asks for graphcap's calls.
void exchange(bool extra, cudaStreamCaptureMode& mode) {
  if (extra) {
    check(cudaThreadExchangeStreamCaptureMode(&mode), "exchange");
  }
}

/// One 1-node graph's whole life by hand; `extra` adds graphcap's seven calls at their places.
void by_hand(cudaStream_t stream, int* sink, bool extra) {
  int device = 0;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (extra) {
    check(cudaGetDevice(&device), "cudaGetDevice");
  }
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin");
  tiny<<<1, 32, 0, stream>>>(sink);
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(stream, &graph), "end");
  cudaGraphExec_t exec = nullptr;
  exchange(extra, mode);
  check(cudaGraphInstantiateWithFlags(&exec, graph, 0), "instantiate");
  exchange(extra, mode);
  exchange(extra, mode);
  check(cudaGraphExecDestroy(exec), "exec destroy");
  exchange(extra, mode);
  exchange(extra, mode);
  check(cudaGraphDestroy(graph), "destroy");
  exchange(extra, mode);
}

} // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("capture_path_calls: no CUDA device present; built, not run\n");
    return 0;
  }
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  int* sink = nullptr;
  check(cudaMalloc(&sink, sizeof(int)), "cudaMalloc");

  constexpr int calls = 200000;
  int device = 0;
  auto start = clock_type::now();
  for (int i = 0; i < calls; ++i) {
    check(cudaGetDevice(&device), "cudaGetDevice");
  }
  std::printf("cudaGetDevice: %.1f ns per call\n", ns_since(start, calls));
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  start = clock_type::now();
  for (int i = 0; i < calls; ++i) {
    check(cudaThreadExchangeStreamCaptureMode(&mode), "exchange");
  }
  std::printf("cudaThreadExchangeStreamCaptureMode: %.1f ns per call\n", ns_since(start, calls));

  std::vector<double> raw;
  std::vector<double> raw_extra;
  std::vector<double> lean;
  constexpr int per_sample = 200;
  for (int round = 0; round < 60; ++round) {
    for (int arm = 0; arm < 3; ++arm) {
      const int which = (arm + round) % 3;
      check(cudaStreamSynchronize(stream), "sync");
      start = clock_type::now();
      for (int i = 0; i < per_sample; ++i) {
        if (which == 2) {
          graphcap::lean_graph graph;
          graph.capture(stream, [&](cudaStream_t s) { tiny<<<1, 32, 0, s>>>(sink); });
        } else {
          by_hand(stream, sink, which == 1);
        }
      }
      const double ns = ns_since(start, per_sample);
      if (round >= 10) { // the first rounds warm up
        (which == 0 ? raw : which == 1 ? raw_extra : lean).push_back(ns / 1000.0);
      }
    }
  }
  const double base = median(raw);
  std::printf("whole life of a 1-node graph, median of %zu samples of %d: by hand %.3f us; by hand "
              "+ graphcap's 7 calls %.3f us (%.3fx); graphcap::lean_graph %.3f us (%.3fx)\n",
              raw.size(), per_sample, base, median(raw_extra), median(raw_extra) / base,
              median(lean), median(lean) / base);
  check(cudaFree(sink), "cudaFree");
  check(cudaStreamDestroy(stream), "stream destroy");
  return 0;
}
