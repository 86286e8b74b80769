// bench_annotations (case 4, annotations rung of the feature ladder): what annot::on costs per
// scope at capture, and at replay, against the same code with annot::off (where cap.mark()
// compiles to nothing) and against the hand-written capture without scopes.
//
// Capture: graphs of S scopes with one tiny kernel each, built the default way (capture() then
// instantiate: annot::on resolves node ids at instantiation), host time per scope. Replay: host
// time per replay call of those graphs. Built only when the graphcap::annotations target exists
// (it links CUPTI).
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <vector>

namespace {

template <class Scope>
void scoped_kernels(Scope& cap, int scopes, int* sink) {
  for (int s = 0; s < scopes; ++s) {
    auto region = cap.mark("scope");
    bench::tiny<<<1, 32, 0, cap.stream()>>>(sink);
  }
}

} // namespace

int main() {
  if (!bench::device_present("bench_annotations")) {
    return 0;
  }
  cudaStream_t stream = nullptr;
  cudaStream_t capture_stream = nullptr;
  bench::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  bench::check(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking), "stream");
  int* sink = nullptr;
  bench::check(cudaMalloc(&sink, sizeof(int)), "cudaMalloc");
  using annotated = graphcap::graph_with<graphcap::annot::on>;
  using bench::micros;
  using bench::steady;

  bench::report report("bench_annotations", "annotations: cost per scope and per replay");
  for (const int scopes : {10, 100, 1000}) {
    const double n = scopes;
    std::vector<double> raw_capture;
    std::vector<double> off_capture;
    std::vector<double> on_capture;
    bench::interleave(bench::scaled(scopes >= 1000 ? 15 : 41), 2,
                      {[&](bool record) {
                         const auto t0 = steady::now();
                         const bench::raw_graph raw(capture_stream, [&](cudaStream_t s) {
                           bench::issue_tiny(s, scopes, sink);
                         });
                         const auto t1 = steady::now();
                         if (record) {
                           raw_capture.push_back(micros(t0, t1) / n);
                         }
                       },
                       [&](bool record) {
                         graphcap::lean_graph graph;
                         const auto t0 = steady::now();
                         graph.capture(capture_stream, [&](graphcap::lean_graph::scope& cap) {
                           scoped_kernels(cap, scopes, sink);
                         });
                         const auto t1 = steady::now();
                         if (record) {
                           off_capture.push_back(micros(t0, t1) / n);
                         }
                       },
                       [&](bool record) {
                         annotated graph;
                         const auto t0 = steady::now();
                         graph.capture(capture_stream, [&](annotated::scope& cap) {
                           scoped_kernels(cap, scopes, sink);
                         });
                         const auto t1 = steady::now();
                         if (record) {
                           on_capture.push_back(micros(t0, t1) / n);
                         }
                       }});
    std::vector<double> per_scope;
    for (std::size_t i = 0; i < on_capture.size(); ++i) {
      per_scope.push_back(on_capture[i] - off_capture[i]);
    }
    report.add("annotations: capture + instantiate", scopes, "raw, no scopes", "us", raw_capture);
    report.add("annotations: capture + instantiate", scopes, "graphcap annot::off, marks", "us",
               off_capture);
    report.add("annotations: capture + instantiate", scopes, "graphcap annot::on, marks", "us",
               on_capture);
    report.add("annotations: cost per scope at capture", scopes, "annot::on minus annot::off", "us",
               per_scope);

    const bench::raw_graph raw(capture_stream,
                               [&](cudaStream_t s) { bench::issue_tiny(s, scopes, sink); });
    graphcap::lean_graph off;
    off.capture(capture_stream,
                [&](graphcap::lean_graph::scope& cap) { scoped_kernels(cap, scopes, sink); });
    annotated on;
    on.capture(capture_stream, [&](annotated::scope& cap) { scoped_kernels(cap, scopes, sink); });
    off.upload(stream);
    on.upload(stream);
    bench::check(cudaGraphUpload(raw.exec(), stream), "cudaGraphUpload");
    std::vector<double> raw_replay;
    std::vector<double> off_replay;
    std::vector<double> on_replay;
    const int launches = scopes >= 1000 ? 20 : 200;
    const auto sample = [&](std::vector<double>& samples, bool record, auto&& replay) {
      const double t = bench::per_call(stream, launches, replay);
      if (record) {
        samples.push_back(t);
      }
    };
    bench::interleave(bench::scaled(31), 3,
                      {[&](bool r) { sample(raw_replay, r, [&] { raw.replay(stream); }); },
                       [&](bool r) { sample(off_replay, r, [&] { off.replay(stream); }); },
                       [&](bool r) { sample(on_replay, r, [&] { on.replay(stream); }); }});
    report.add("annotations: replay call", scopes, "raw cudaGraphLaunch", "us", raw_replay);
    report.add("annotations: replay call", scopes, "graphcap annot::off", "us", off_replay);
    report.add("annotations: replay call", scopes, "graphcap annot::on", "us", on_replay);
    report.note(std::to_string(scopes) + " scopes: annot::on recorded " +
                std::to_string(on.annot_policy().annotations().size()) + " annotated nodes");
  }
  report.finish();
  bench::check(cudaFree(sink), "cudaFree");
  bench::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  bench::check(cudaStreamDestroy(capture_stream), "cudaStreamDestroy");
  return 0;
}
