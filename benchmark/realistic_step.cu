// bench_step (case 6): a realistic latency-bound step, 200 small elementwise kernels (x += 1 over
// 1024 floats, what PyTorch's `x.add_(1.0)` launches), run for 1000 steps as raw eager launches,
// a raw graph and a graphcap graph. Each step ends with a stream synchronize, as a loop that
// reads its result each step does; the host time of every step is a sample. PyTorch's eager and
// graph-replay arms of the same step are in benchmark/pytorch_bench.py.
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <vector>

namespace {

constexpr int kernels_per_step = 200;
constexpr int elements = 1024;
constexpr int threads = 256;

void issue_step(cudaStream_t stream, float* x) {
  for (int k = 0; k < kernels_per_step; ++k) {
    bench::add_scalar<<<elements / threads, threads, 0, stream>>>(x, 1.0F, elements);
  }
}

} // namespace

int main() {
  if (!bench::device_present("bench_step")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::device_array<float> x(elements);
  bench::check(cudaMemset(x, 0, elements * sizeof(float)), "cudaMemset");

  const bench::raw_graph raw(capture_stream, [&](cudaStream_t s) { issue_step(s, x); });
  graphcap::lean_graph graph;
  graph.capture(capture_stream, [&](cudaStream_t s) { issue_step(s, x); });
  graph.upload(stream);
  bench::check(cudaGraphUpload(raw.exec(), stream), "cudaGraphUpload");

  const int steps = 1000;
  // Runs `steps` steps, each one synchronized, and keeps each step's host time.
  const auto run_steps = [&](std::vector<double>& samples, bool record, auto&& step) {
    bench::synchronized_steps(stream, steps, samples, record, step);
  };
  std::vector<double> eager_times;
  std::vector<double> raw_times;
  std::vector<double> graphcap_times;
  bench::report report("bench_step", "host time per step (us): 200 small kernels, synchronized");
  bench::interleave(
      bench::scaled(3), 1,
      {[&](bool record) {
         run_steps(eager_times, record, [&] {
           issue_step(stream, x);
           bench::check(cudaGetLastError(), "kernel launch");
         });
       },
       [&](bool record) { run_steps(raw_times, record, [&] { raw.replay(stream); }); },
       [&](bool record) { run_steps(graphcap_times, record, [&] { graph.replay(stream); }); }});
  report.add("step", kernels_per_step, "raw eager", "us", eager_times);
  report.add("step", kernels_per_step, "raw graph", "us", raw_times);
  report.add("step", kernels_per_step, "graphcap graph", "us", graphcap_times);
  report.finish();
  return 0;
}
