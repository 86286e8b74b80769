// bench_device (case 3): device time per tiny kernel, issued on a stream against replayed as a
// graph (hand-written and graphcap), for 10 to 10000 kernels.
//
// Device time is measured with events around the work. So that the host's launch rate does not
// set the pace, the work is queued behind a gate kernel that spins until the host has issued
// everything (bench::gate); a gate that times out (the launch queue filled up and blocked the
// host) is reported, because the stream arm is then partly host-bound.
//
// Before timing, the graphcap graph is checked to be the raw one: same node count, node types,
// kernels and edges (bench::compare_shapes). A mismatch ends the program with status 1: the
// comparison would be meaningless.
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <string>
#include <vector>

int main() {
  if (!bench::device_present("bench_device")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::device_array<int> sink(1);
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  bench::check(cudaEventCreate(&start), "cudaEventCreate");
  bench::check(cudaEventCreate(&stop), "cudaEventCreate");
  bench::gate gate;

  bench::report report("bench_device", "device time per kernel (us), events around the work");
  for (const int kernels : {10, 100, 1000, 10000}) {
    const bench::raw_graph raw(
        capture_stream, [&](cudaStream_t s) { bench::issue_tiny(s, kernels, sink); }, true);
    graphcap::lean_graph graph{graphcap::keep_graph};
    graph.capture(capture_stream, [&](cudaStream_t s) { bench::issue_tiny(s, kernels, sink); });
    const std::string difference = bench::compare_shapes(raw.graph(), graph.raw_graph());
    if (!difference.empty()) {
      std::fprintf(stderr, "bench_device: graphcap's graph differs from the raw one: %s\n",
                   difference.c_str());
      return 1;
    }
    graph.upload(stream);
    bench::check(cudaGraphUpload(raw.exec(), stream), "cudaGraphUpload");
    report.note(std::to_string(kernels) + " kernels: graphcap's graph has the raw graph's " +
                std::to_string(graph.node_count()) + " nodes and edges");

    // One sample: the gate, the start event, the work, the stop event, open the gate, wait.
    const auto timed = [&](auto&& work) {
      gate.close(stream);
      bench::check(cudaEventRecord(start, stream), "cudaEventRecord");
      work();
      bench::check(cudaEventRecord(stop, stream), "cudaEventRecord");
      gate.open();
      bench::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float milliseconds = 0;
      bench::check(cudaEventElapsedTime(&milliseconds, start, stop), "cudaEventElapsedTime");
      return 1000.0 * milliseconds / kernels;
    };
    std::vector<double> stream_times;
    std::vector<double> raw_times;
    std::vector<double> graphcap_times;
    const int timeouts_before = gate.timeouts();
    const int rounds = bench::scaled(kernels >= 10000 ? 11 : 31);
    bench::interleave(rounds, 2,
                      {[&](bool record) {
                         const double t = timed([&] {
                           bench::issue_tiny(stream, kernels, sink);
                           bench::check(cudaGetLastError(), "kernel launch");
                         });
                         if (record) {
                           stream_times.push_back(t);
                         }
                       },
                       [&](bool record) {
                         const double t = timed([&] { raw.replay(stream); });
                         if (record) {
                           raw_times.push_back(t);
                         }
                       },
                       [&](bool record) {
                         const double t = timed([&] { graph.replay(stream); });
                         if (record) {
                           graphcap_times.push_back(t);
                         }
                       }});
    report.add("device time per kernel", kernels, "raw graph", "us", raw_times);
    report.add("device time per kernel", kernels, "graphcap graph", "us", graphcap_times);
    report.add("device time per kernel", kernels, "stream (eager)", "us", stream_times);
    if (gate.timeouts() != timeouts_before) {
      report.note(std::to_string(kernels) + " kernels: the gate timed out " +
                  std::to_string(gate.timeouts() - timeouts_before) +
                  " times (launch queue full): the stream arm is partly host-bound there");
    }
  }
  report.finish();
  bench::check(cudaEventDestroy(start), "cudaEventDestroy");
  bench::check(cudaEventDestroy(stop), "cudaEventDestroy");
  return 0;
}
