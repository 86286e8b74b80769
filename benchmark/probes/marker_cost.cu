// Probe (kept, issue #48): what a completion marker costs a replay, and where. bench_features
// reads pool::shared's replay at 1.22-1.25x a preallocated graph, while a 1-kernel graph with an
// event-record node at its end replayed at 0.997-1.001x the plain graph. This probe times, in one
// process, interleaved, 200 launches per sample (the benchmark's measure):
//   chain     the benchmark's graph: 10 small kernels cycling over four buffers
//   +record   the same with an event-record node captured at its end (cudaEventRecordWithFlags,
//             cudaEventRecordExternal, an event made with cudaEventDisableTiming: graphcap's)
//   +added    the same node added with cudaGraphAddEventRecordNode after the capture
//   +timing   the captured record with an event that keeps timing
//   +host     the plain chain, and a host cudaEventRecord after each launch
//   +memset   a 4-byte memset node at its end
// for a chain of 1 and of 10 kernels. Each line: the median per launch of the whole batch to the
// stream drained (the device's pace) and of the host's launch calls alone (bench_features'
// "replay call"), each with its ratio to the plain chain of the same length.
//
//   nvcc -std=c++20 -O2 -arch=sm_90 -o marker_cost marker_cost.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

__global__ void add_scalar(float* data, float value, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    data[i] += value;
  }
}

constexpr int floats = 256;
constexpr int launches = 200;

static void chain(cudaStream_t stream, float* const* buffers, int kernels) {
  for (int k = 0; k < kernels; ++k) {
    add_scalar<<<1, floats, 0, stream>>>(buffers[k % 4], 1.0F, floats);
  }
}

enum class tail { none, record, record_timing, memset };

static cudaGraphExec_t make(cudaStream_t stream, float* const* buffers, int kernels, tail what,
                            cudaEvent_t event, bool add_node_after) {
  cudaGraph_t graph = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  chain(stream, buffers, kernels);
  if (what == tail::record || what == tail::record_timing) {
    if (!add_node_after) {
      cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal);
    }
  } else if (what == tail::memset) {
    cudaMemsetAsync(buffers[0], 0, 4, stream);
  }
  cudaStreamEndCapture(stream, &graph);
  if (add_node_after) { // after every sink: the leaves of a chain are its last kernel
    std::size_t count = 0;
    cudaGraphGetNodes(graph, nullptr, &count);
    std::vector<cudaGraphNode_t> nodes(count);
    cudaGraphGetNodes(graph, nodes.data(), &count);
    cudaGraphNode_t node = nullptr;
    cudaGraphAddEventRecordNode(&node, graph, &nodes.back(), 1, event);
  }
  cudaGraphExec_t exec = nullptr;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    std::printf("instantiate failed\n");
  }
  cudaGraphDestroy(graph);
  cudaGraphUpload(exec, stream);
  return exec;
}

struct arm {
  const char* name;
  std::function<void()> launch;
  std::vector<double> micros; // per launch, drained stream: the device's pace
  std::vector<double> calls;  // per launch, the host's calls alone (bench_features' measure)
};

int main() {
  cudaStream_t stream = nullptr;
  cudaStream_t capture = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::printf("no device\n");
    return 1;
  }
  cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking);
  float* buffers[4];
  for (float*& buffer : buffers) {
    cudaMalloc(&buffer, floats * sizeof(float));
  }
  cudaEvent_t untimed = nullptr, timed = nullptr, added = nullptr, host = nullptr;
  cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&added, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&host, cudaEventDisableTiming);
  cudaEventCreate(&timed);

  for (int kernels : {1, 10}) {
    cudaGraphExec_t plain = make(capture, buffers, kernels, tail::none, nullptr, false);
    cudaGraphExec_t control = make(capture, buffers, kernels, tail::none, nullptr, false);
    cudaGraphExec_t record = make(capture, buffers, kernels, tail::record, untimed, false);
    cudaGraphExec_t add = make(capture, buffers, kernels, tail::record, added, true);
    cudaGraphExec_t timing = make(capture, buffers, kernels, tail::record_timing, timed, false);
    cudaGraphExec_t memset = make(capture, buffers, kernels, tail::memset, nullptr, false);
    std::vector<arm> arms = {
        {"plain", [&] { cudaGraphLaunch(plain, stream); }, {}},
        {"plain, control", [&] { cudaGraphLaunch(control, stream); }, {}},
        {"+record (graphcap's marker)", [&] { cudaGraphLaunch(record, stream); }, {}},
        {"+record added after capture", [&] { cudaGraphLaunch(add, stream); }, {}},
        {"+record, timing event", [&] { cudaGraphLaunch(timing, stream); }, {}},
        {"+host cudaEventRecord",
         [&] {
           cudaGraphLaunch(plain, stream);
           cudaEventRecord(host, stream);
         },
         {}},
        {"+memset node", [&] { cudaGraphLaunch(memset, stream); }, {}},
    };
    for (int round = 0; round < 3 * 41; ++round) {
      for (arm& a : arms) {
        cudaStreamSynchronize(stream);
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; ++i) {
          a.launch();
        }
        const auto called = std::chrono::steady_clock::now();
        cudaStreamSynchronize(stream);
        const auto t1 = std::chrono::steady_clock::now();
        if (round >= 3) { // warm-up rounds dropped
          a.micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
          a.calls.push_back(std::chrono::duration<double, std::micro>(called - t0).count() /
                            launches);
        }
      }
    }
    std::printf("chain of %d kernel(s)\n", kernels);
    double base = 0;
    double base_call = 0;
    for (arm& a : arms) {
      std::sort(a.micros.begin(), a.micros.end());
      std::sort(a.calls.begin(), a.calls.end());
      const double median = a.micros[a.micros.size() / 2];
      const double call = a.calls[a.calls.size() / 2];
      if (base == 0) {
        base = median;
        base_call = call;
      }
      std::printf("  %-32s launch to done %8.3f us  %.3fx   host call %7.3f us  %.3fx\n", a.name,
                  median, median / base, call, call / base_call);
    }
    for (cudaGraphExec_t exec : {plain, control, record, add, timing, memset}) {
      cudaGraphExecDestroy(exec);
    }
  }
  std::printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
  return 0;
}
