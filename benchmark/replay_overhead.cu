// bench_replay (case 1): the cost of one replay call, graphcap's lean graph against a
// hand-written cudaGraphLaunch of an identical graph, for straight-line graphs of 1 to 10000
// tiny kernels.
//
// Both arms run in the same process on the same stream, interleaved round by round, and each
// sample times a batch of launches on the host clock (drained before and after): what a
// latency-bound loop pays per step. PyTorch's CUDAGraph.replay() at the same sizes is measured by
// benchmark/pytorch_bench.py.
//
// A third arm replays a second raw graph captured from the same work: raw against raw, the
// control that says how far from 1.0 two identical arms read in this run (a graphcap ratio is
// judged against it, not against 1.0 alone).
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <vector>

int main() {
  if (!bench::device_present("bench_replay")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::device_array<int> sink(1);

  bench::report report("bench_replay", "host time per replay call (us), batches of launches");
  for (const int kernels : {1, 10, 100, 1000, 10000}) {
    const bench::raw_graph raw(capture_stream,
                               [&](cudaStream_t s) { bench::issue_tiny(s, kernels, sink); });
    const bench::raw_graph control(capture_stream,
                                   [&](cudaStream_t s) { bench::issue_tiny(s, kernels, sink); });
    graphcap::lean_graph graph;
    graph.capture(capture_stream, [&](cudaStream_t s) { bench::issue_tiny(s, kernels, sink); });
    if (graph.node_count() != static_cast<std::size_t>(kernels)) {
      std::fprintf(stderr, "bench_replay: graphcap captured %zu nodes, expected %d\n",
                   graph.node_count(), kernels);
      return 1;
    }
    graph.upload(stream);
    bench::check(cudaGraphUpload(raw.exec(), stream), "cudaGraphUpload");
    bench::check(cudaGraphUpload(control.exec(), stream), "cudaGraphUpload");
    const int launches = kernels >= 1000 ? 20 : 200;
    // Device-bound sizes (a full launch queue) vary most per sample: more rounds there (session
    // 6: 41 rounds left the 1000-node ratio moving +-3.2% over three runs).
    const int rounds = bench::scaled(kernels >= 10000 ? 31 : kernels >= 1000 ? 101 : 41);
    std::vector<double> raw_times;
    std::vector<double> graphcap_times;
    std::vector<double> control_times;
    bench::interleave(
        rounds, 3,
        {bench::per_call_arm(raw_times, stream, launches, [&] { raw.replay(stream); }),
         bench::per_call_arm(graphcap_times, stream, launches, [&] { graph.replay(stream); }),
         bench::per_call_arm(control_times, stream, launches, [&] { control.replay(stream); })});
    report.add("replay call", kernels, "raw cudaGraphLaunch", "us", raw_times);
    report.add("replay call", kernels, "graphcap lean_graph", "us", graphcap_times);
    report.add("replay call", kernels, "raw cudaGraphLaunch, control", "us", control_times);
  }
  report.finish();
  return 0;
}
