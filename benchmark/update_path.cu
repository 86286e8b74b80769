// bench_update (case 5): changing a graph's parameters without rebuilding it. Recapture the same
// topology with new kernel arguments, then either update the existing executable graph
// (cudaGraphExecUpdate) or instantiate a new one (and destroy the old), for 10 to 10000 nodes.
// Host time per node, each step on its own and together.
//
// graphcap's arms, in the same interleave: basic_graph::recapture() (updates in place) against
// reset() + capture() (instantiates anew), end to end.
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <vector>

int main() {
  if (!bench::device_present("bench_update")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::device_array<int> sinks(2); // each recapture switches the kernels' argument
  using bench::micros;
  using bench::steady;

  bench::report report("bench_update", "host time per node (us) to change a graph's arguments");
  for (const int nodes : {10, 100, 1000, 10000}) {
    const double n = nodes;
    int generation = 0;
    const auto capture = [&] {
      int* sink = sinks + (generation++ % 2);
      cudaGraph_t graph = nullptr;
      bench::check(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal), "begin");
      bench::issue_tiny(capture_stream, nodes, sink);
      bench::check(cudaStreamEndCapture(capture_stream, &graph), "end");
      return graph;
    };
    cudaGraphExec_t updated_exec = nullptr;
    cudaGraphExec_t rebuilt_exec = nullptr;
    {
      cudaGraph_t first = capture();
      bench::check(cudaGraphInstantiateWithFlags(&updated_exec, first, 0), "instantiate");
      bench::check(cudaGraphInstantiateWithFlags(&rebuilt_exec, first, 0), "instantiate");
      bench::check(cudaGraphDestroy(first), "destroy");
    }
    std::vector<double> capture_times[2];
    std::vector<double> apply_times[2];
    std::vector<double> total_times[2];
    const auto record = [&](int arm, steady::time_point t0, steady::time_point t1,
                            steady::time_point t2) {
      capture_times[arm].push_back(micros(t0, t1) / n);
      apply_times[arm].push_back(micros(t1, t2) / n);
      total_times[arm].push_back(micros(t0, t2) / n);
    };
    const auto update_arm = [&](bool recorded) {
      const auto t0 = steady::now();
      cudaGraph_t graph = capture();
      const auto t1 = steady::now();
      cudaGraphExecUpdateResultInfo info{};
      bench::check(cudaGraphExecUpdate(updated_exec, graph, &info), "cudaGraphExecUpdate");
      bench::check(cudaGraphDestroy(graph), "destroy");
      const auto t2 = steady::now();
      if (info.result != cudaGraphExecUpdateSuccess) {
        std::fprintf(stderr, "bench_update: cudaGraphExecUpdate result %d\n",
                     static_cast<int>(info.result));
        std::exit(1);
      }
      bench::check(cudaGraphLaunch(updated_exec, stream), "launch");
      bench::check(cudaStreamSynchronize(stream), "sync");
      if (recorded) {
        record(0, t0, t1, t2);
      }
    };
    const auto reinstantiate_arm = [&](bool recorded) {
      const auto t0 = steady::now();
      cudaGraph_t graph = capture();
      const auto t1 = steady::now();
      bench::check(cudaGraphExecDestroy(rebuilt_exec), "exec destroy");
      bench::check(cudaGraphInstantiateWithFlags(&rebuilt_exec, graph, 0), "instantiate");
      bench::check(cudaGraphDestroy(graph), "destroy");
      const auto t2 = steady::now();
      bench::check(cudaGraphLaunch(rebuilt_exec, stream), "launch");
      bench::check(cudaStreamSynchronize(stream), "sync");
      if (recorded) {
        record(1, t0, t1, t2);
      }
    };
    // graphcap's arms: recapture() (capture, then update in place) against reset() + capture()
    // (capture, then instantiate), each timed end to end (capture and apply are one call).
    int graphcap_generation = 0;
    const auto graphcap_work = [&](cudaStream_t s) {
      bench::issue_tiny(s, nodes, sinks + (graphcap_generation++ % 2));
    };
    graphcap::lean_graph updated_graph;
    graphcap::lean_graph rebuilt_graph;
    updated_graph.capture(capture_stream, graphcap_work);
    rebuilt_graph.capture(capture_stream, graphcap_work);
    std::vector<double> graphcap_times[2];
    bool all_updated = true;
    const auto graphcap_update_arm = [&](bool recorded) {
      const auto t0 = steady::now();
      const graphcap::update_result result = updated_graph.recapture(capture_stream, graphcap_work);
      const auto t1 = steady::now();
      all_updated = all_updated && result.updated();
      updated_graph.replay(stream);
      bench::check(cudaStreamSynchronize(stream), "sync");
      if (recorded) {
        graphcap_times[0].push_back(micros(t0, t1) / n);
      }
    };
    const auto graphcap_reinstantiate_arm = [&](bool recorded) {
      const auto t0 = steady::now();
      rebuilt_graph.reset();
      rebuilt_graph.capture(capture_stream, graphcap_work);
      const auto t1 = steady::now();
      rebuilt_graph.replay(stream);
      bench::check(cudaStreamSynchronize(stream), "sync");
      if (recorded) {
        graphcap_times[1].push_back(micros(t0, t1) / n);
      }
    };
    const int rounds = bench::scaled(nodes >= 10000 ? 9 : nodes >= 1000 ? 21 : 41);
    bench::interleave(
        rounds, 2,
        {update_arm, reinstantiate_arm, graphcap_update_arm, graphcap_reinstantiate_arm});
    if (!all_updated) {
      std::fprintf(stderr, "bench_update: graphcap's recapture did not update in place\n");
      std::exit(1);
    }
    const char* arms[2] = {"raw recapture + cudaGraphExecUpdate", "raw recapture + instantiate"};
    for (int arm = 0; arm < 2; ++arm) {
      report.add("recapture", nodes, arms[arm], "us", capture_times[arm]);
      report.add("update or instantiate", nodes, arms[arm], "us", apply_times[arm]);
      report.add("recapture + update or instantiate", nodes, arms[arm], "us", total_times[arm]);
    }
    report.add("recapture + update or instantiate", nodes, "graphcap recapture (update)", "us",
               graphcap_times[0]);
    report.add("recapture + update or instantiate", nodes, "graphcap reset + capture", "us",
               graphcap_times[1]);
    bench::check(cudaGraphExecDestroy(updated_exec), "exec destroy");
    bench::check(cudaGraphExecDestroy(rebuilt_exec), "exec destroy");
  }
  report.note("values are per node; graphcap arms time capture and apply together");
  report.finish();
  return 0;
}
