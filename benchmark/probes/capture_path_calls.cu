// Probe (#32, goal 2): what the calls graphcap adds to a capture's whole life cost. graphcap's
// default path (capture, instantiate, destroy) makes seven calls the hand-written one does not:
// cudaGetDevice at the capture's begin, and a capture-mode exchange pair
// (cudaThreadExchangeStreamCaptureMode twice) around the instantiation and around each of the two
// destructions. This times each call alone, then the whole life of a 1-node graph four ways,
// interleaved: by hand; by hand plus those seven calls; graphcap::lean_graph; and by hand with the
// template destroyed first, right after the instantiation (bench_build's raw arm).
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

/// One 1-node graph's whole life by hand, the template destroyed right after the instantiation
/// and before the executable (as bench_build's raw arm does).
void by_hand_template_first(cudaStream_t stream, int* sink) {
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin");
  tiny<<<1, 32, 0, stream>>>(sink);
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(stream, &graph), "end");
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiateWithFlags(&exec, graph, 0), "instantiate");
  check(cudaGraphDestroy(graph), "destroy");
  check(cudaGraphExecDestroy(exec), "exec destroy");
}

/// One 1-node graph's whole life by hand, the executable destroyed before the template (as
/// graphcap does); `extra` adds graphcap's seven calls at their places.
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

  std::vector<double> samples[4]; // by hand, + the seven calls, graphcap, by hand template first
  constexpr int per_sample = 200;
  constexpr int arms = 4;
  for (int round = 0; round < 60; ++round) {
    for (int arm = 0; arm < arms; ++arm) {
      const int which = (arm + round) % arms;
      check(cudaStreamSynchronize(stream), "sync");
      start = clock_type::now();
      for (int i = 0; i < per_sample; ++i) {
        if (which == 2) {
          graphcap::lean_graph graph;
          graph.capture(stream, [&](cudaStream_t s) { tiny<<<1, 32, 0, s>>>(sink); });
        } else if (which == 3) {
          by_hand_template_first(stream, sink);
        } else {
          by_hand(stream, sink, which == 1);
        }
      }
      const double ns = ns_since(start, per_sample);
      if (round >= 10) { // the first rounds warm up
        samples[which].push_back(ns / 1000.0);
      }
    }
  }
  const double base = median(samples[0]);
  std::printf("whole life of a 1-node graph, median of %zu samples of %d: by hand (executable "
              "destroyed first) %.3f us; by hand + graphcap's 7 calls %.3f us (%.3fx); "
              "graphcap::lean_graph %.3f us (%.3fx); by hand, template destroyed first %.3f us "
              "(%.3fx)\n",
              samples[0].size(), per_sample, base, median(samples[1]), median(samples[1]) / base,
              median(samples[2]), median(samples[2]) / base, median(samples[3]),
              median(samples[3]) / base);
  check(cudaFree(sink), "cudaFree");
  check(cudaStreamDestroy(stream), "stream destroy");
  return 0;
}
