// bench_annotations (case 4, annotations rung of the feature ladder): what annot::on costs per
// scope at capture, and at replay, against the same code with annot::off (where cap.mark()
// compiles to nothing) and against the hand-written capture without scopes.
//
// Capture: graphs of S scopes with one tiny kernel each, built the default way (capture() then
// instantiate: annot::on resolves node ids at instantiation), host time per scope, for each node
// discovery (CUPTI's creation callbacks, the default, with CUPTI's subscriber taken per capture
// or kept; the graph walk). The cost per scope at S scopes holds a fixed cost per capture spread
// over S: the 1-scope row shows it (fixed + one scope); the notes give the marginal cost per scope,
// the slope of the medians from 100 to 1000 scopes.
// Replay: host time per replay call of those graphs. Built only when the graphcap::annotations
// target exists (it links CUPTI).
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <cstdio>
#include <map>
#include <string>
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
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::device_array<int> sink(1);
  using annotated = graphcap::graph_with<graphcap::annot::on>;
  using bench::micros;
  using bench::steady;

  bench::report report("bench_annotations", "annotations: cost per scope and per replay");
  // Median cost per scope (us), by discovery and scope count: for the slope in the notes.
  std::map<std::string, std::map<int, double>> per_scope_median;
  for (const int scopes : {1, 10, 100, 1000}) {
    const double n = scopes;
    std::vector<double> raw_capture;
    std::vector<double> off_capture;
    std::vector<double> on_capture;
    std::vector<double> walk_capture;
    // One capture (and instantiation) of `scopes` scopes into a new Graph, its time per scope.
    const auto scoped_capture = [&]<class Graph>(std::vector<double>& samples, bool record) {
      Graph graph;
      const auto t0 = steady::now();
      graph.capture(capture_stream,
                    [&](typename Graph::scope& cap) { scoped_kernels(cap, scopes, sink); });
      const auto t1 = steady::now();
      if (record) {
        samples.push_back(micros(t0, t1) / n);
      }
    };
    const auto lean_capture = [&](std::vector<double>& samples, bool record) {
      scoped_capture.template operator()<graphcap::lean_graph>(samples, record);
    };
    const auto annotated_capture = [&](std::vector<double>& samples, bool record) {
      scoped_capture.template operator()<annotated>(samples, record);
    };
    // Small captures vary more from one to the next: more rounds where they are cheap.
    const int rounds = bench::scaled(scopes >= 1000 ? 15 : scopes >= 100 ? 101 : 401);
    bench::interleave(rounds, 2,
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
                       [&](bool record) { lean_capture(off_capture, record); },
                       [&](bool record) { annotated_capture(on_capture, record); },
                       [&](bool record) {
                         graphcap::set_node_discovery(graphcap::node_discovery::graph_walk);
                         annotated_capture(walk_capture, record);
                         graphcap::set_node_discovery(graphcap::node_discovery::creation_callbacks);
                       }});
    // Per round: the annotated capture minus the annot::off one of the same round.
    const auto minus = [](const std::vector<double>& on, const std::vector<double>& off) {
      std::vector<double> per_scope;
      for (std::size_t i = 0; i < on.size(); ++i) {
        per_scope.push_back(on[i] - off[i]);
      }
      return per_scope;
    };
    report.add("annotations: capture + instantiate", scopes, "raw, no scopes", "us", raw_capture);
    report.add("annotations: capture + instantiate", scopes, "graphcap annot::off, marks", "us",
               off_capture);
    report.add("annotations: capture + instantiate", scopes, "graphcap annot::on, marks", "us",
               on_capture);
    report.add("annotations: capture + instantiate", scopes, "annot::on, marks, graph walk", "us",
               walk_capture);
    const std::vector<double> callbacks_cost = minus(on_capture, off_capture);
    const std::vector<double> walk_cost = minus(walk_capture, off_capture);
    report.add("annotations: cost per scope at capture", scopes, "annot::on minus annot::off", "us",
               callbacks_cost);
    report.add("annotations: cost per scope at capture", scopes, "graph walk minus annot::off",
               "us", walk_cost);
    per_scope_median["creation callbacks"][scopes] = bench::summarize(callbacks_cost).median;
    per_scope_median["graph walk"][scopes] = bench::summarize(walk_cost).median;

    // CUPTI's subscriber kept between captures: a loop of its own, with its own annot::off arm
    // (giving the subscriber back between two kept captures would put the cost back).
    std::vector<double> off_kept;
    std::vector<double> on_kept;
    graphcap::keep_cupti_subscriber(true);
    bench::interleave(rounds, 2,
                      {[&](bool record) { lean_capture(off_kept, record); },
                       [&](bool record) { annotated_capture(on_kept, record); }});
    graphcap::keep_cupti_subscriber(false);
    const std::vector<double> kept_cost = minus(on_kept, off_kept);
    report.add("annotations: cost per scope at capture", scopes, "subscriber kept minus annot::off",
               "us", kept_cost);
    per_scope_median["creation callbacks, subscriber kept"][scopes] =
        bench::summarize(kept_cost).median;

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
    bench::interleave(
        bench::scaled(31), 3,
        {bench::per_call_arm(raw_replay, stream, launches, [&] { raw.replay(stream); }),
         bench::per_call_arm(off_replay, stream, launches, [&] { off.replay(stream); }),
         bench::per_call_arm(on_replay, stream, launches, [&] { on.replay(stream); })});
    report.add("annotations: replay call", scopes, "raw cudaGraphLaunch", "us", raw_replay);
    report.add("annotations: replay call", scopes, "graphcap annot::off", "us", off_replay);
    report.add("annotations: replay call", scopes, "graphcap annot::on", "us", on_replay);
    const bool by_callbacks =
        on.annot_policy().discovery() == graphcap::node_discovery::creation_callbacks;
    report.note(
        std::to_string(scopes) + " scopes: annot::on recorded " +
        std::to_string(on.annot_policy().annotations().size()) + " annotated nodes, found by " +
        (by_callbacks ? "creation callbacks" : "the graph walk (CUPTI's subscriber taken)"));
  }
  for (const auto& [discovery, cost] : per_scope_median) {
    // Total cost at S scopes: fixed + S * marginal; the slope of the medians at 100 and 1000.
    const double marginal = (cost.at(1000) * 1000 - cost.at(100) * 100) / 900;
    char text[160];
    std::snprintf(text, sizeof text, "%s: marginal cost per scope %.3f us (100 to 1000 scopes)",
                  discovery.c_str(), marginal);
    report.note(text);
  }
  report.finish();
  return 0;
}
