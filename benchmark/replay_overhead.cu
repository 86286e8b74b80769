// bench_replay: the cost of one replay call, graphcap's lean graph against a hand-written
// cudaGraphLaunch of an identical graph, for straight-line graphs of 1 to 10000 tiny kernels.
//
// Both arms run in the same process on the same stream, interleaved round by round (the order
// alternates), and each round times a batch of launches on the host clock: what a latency-bound
// loop pays per step. Prints a table and writes bench_replay.csv (into $OUT when set).
#include <graphcap/graphcap.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

__global__ void tiny(int* sink) {
  if (threadIdx.x == 0 && sink != nullptr) {
    *sink += 1;
  }
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorName(status));
    std::exit(EXIT_FAILURE);
  }
}

void issue(cudaStream_t stream, int kernels, int* sink) {
  for (int k = 0; k < kernels; ++k) {
    tiny<<<1, 32, 0, stream>>>(sink);
  }
}

/// The hand-written arm: capture, instantiate, launch, with the same error checks.
struct raw_graph {
  cudaGraphExec_t exec = nullptr;
  raw_graph(cudaStream_t capture_stream, int kernels, int* sink) {
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal), "begin");
    issue(capture_stream, kernels, sink);
    check(cudaStreamEndCapture(capture_stream, &graph), "end");
    check(cudaGraphInstantiateWithFlags(&exec, graph, 0), "instantiate");
    check(cudaGraphDestroy(graph), "destroy");
  }
  ~raw_graph() { cudaGraphExecDestroy(exec); }
  raw_graph(const raw_graph&) = delete;
  raw_graph& operator=(const raw_graph&) = delete;
  void replay(cudaStream_t stream) const { check(cudaGraphLaunch(exec, stream), "launch"); }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

template <class Replay>
double time_batch(cudaStream_t stream, int launches, Replay&& replay) {
  check(cudaStreamSynchronize(stream), "sync");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    replay();
  }
  const auto stop = std::chrono::steady_clock::now();
  check(cudaStreamSynchronize(stream), "sync");
  return std::chrono::duration<double, std::micro>(stop - start).count() / launches;
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("bench_replay: no CUDA device present; built, not run.\n");
    return 0;
  }
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "properties");
  int driver = 0;
  check(cudaDriverGetVersion(&driver), "driver");
  cudaStream_t stream = nullptr;
  cudaStream_t capture_stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  check(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking), "stream");
  int* sink = nullptr;
  check(cudaMalloc(&sink, sizeof(int)), "malloc");

  const char* out_dir = std::getenv("OUT");
  const std::string csv_path =
      std::string(out_dir != nullptr ? out_dir : ".") + "/bench_replay.csv";
  std::FILE* csv = std::fopen(csv_path.c_str(), "w");
  if (csv != nullptr) {
    std::fprintf(csv,
                 "kernels,raw_median_us,graphcap_median_us,raw_p99_us,graphcap_p99_us,ratio\n");
  }
  std::printf("bench_replay on %s (driver %d): host time per replay call, median of rounds\n",
              properties.name, driver);
  std::printf("%8s %14s %14s %10s %10s %8s\n", "kernels", "raw us", "graphcap us", "raw p99",
              "gc p99", "ratio");
  for (const int kernels : {1, 10, 100, 1000, 10000}) {
    const raw_graph raw(capture_stream, kernels, sink);
    graphcap::lean_graph graph;
    graph.capture(capture_stream, [&](cudaStream_t s) { issue(s, kernels, sink); });
    graph.upload(stream);
    check(cudaGraphUpload(raw.exec, stream), "upload");
    const int launches = kernels >= 1000 ? 20 : 200;
    const int rounds = kernels >= 10000 ? 15 : 41;
    std::vector<double> raw_times;
    std::vector<double> gc_times;
    for (int warm = 0; warm < 3; ++warm) {
      time_batch(stream, launches, [&] { raw.replay(stream); });
      time_batch(stream, launches, [&] { graph.replay(stream); });
    }
    for (int round = 0; round < rounds; ++round) {
      if (round % 2 == 0) {
        raw_times.push_back(time_batch(stream, launches, [&] { raw.replay(stream); }));
        gc_times.push_back(time_batch(stream, launches, [&] { graph.replay(stream); }));
      } else {
        gc_times.push_back(time_batch(stream, launches, [&] { graph.replay(stream); }));
        raw_times.push_back(time_batch(stream, launches, [&] { raw.replay(stream); }));
      }
    }
    const double raw_median = median(raw_times);
    const double gc_median = median(gc_times);
    std::printf("%8d %14.3f %14.3f %10.3f %10.3f %8.3f\n", kernels, raw_median, gc_median,
                percentile(raw_times, 0.99), percentile(gc_times, 0.99), gc_median / raw_median);
    if (csv != nullptr) {
      std::fprintf(csv, "%d,%.4f,%.4f,%.4f,%.4f,%.4f\n", kernels, raw_median, gc_median,
                   percentile(raw_times, 0.99), percentile(gc_times, 0.99), gc_median / raw_median);
    }
  }
  if (csv != nullptr) {
    std::fclose(csv);
  }
  check(cudaFree(sink), "free");
  check(cudaStreamDestroy(stream), "stream");
  check(cudaStreamDestroy(capture_stream), "stream");
  return 0;
}
