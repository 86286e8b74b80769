// bench_liveness (issue 32, goal 1): liveness::check's replay with a liveness::free_watch running,
// against raw cudaGraphLaunch, for 1 to 64 external inputs and nothing freed between replays:
//   raw cudaGraphLaunch                    the hand-written replay (the watch running)
//   graphcap liveness::check + free_watch  one load instead of one driver query per input
//   graphcap liveness::check, no watch     the per-input queries (the watch stopped for the arm)
//   raw cudaGraphLaunch, no watch          what the watch's CUPTI subscription costs other calls
// and, per sample, the replay after one cudaFree of unrelated memory (the full check it triggers).
// Links graphcap::free_watch (CUPTI).
#include <graphcap/free_watch.hpp>
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <optional>
#include <string>
#include <vector>

namespace {

constexpr int buffer_floats = 256;

/// Replay calls per sample (a batch of launches).
constexpr int launches = 200;

void replay_with_watch(bench::report& report, cudaStream_t stream, cudaStream_t capture_stream) {
  using checked = graphcap::graph_with<graphcap::liveness::check>;
  for (const int inputs : {1, 4, 16, 64}) {
    bench::pointer_table table{};
    table.count = inputs;
    for (int i = 0; i < inputs; ++i) { // separate allocations: separate buffer ids
      bench::check(cudaMalloc(&table.pointers[i], buffer_floats * sizeof(float)), "cudaMalloc");
    }
    const auto issue = [&](cudaStream_t s) { bench::touch_all<<<1, 32, 0, s>>>(table); };
    const bench::raw_graph raw(capture_stream, issue);
    checked on;
    on.capture(capture_stream, issue);
    on.upload(stream);
    std::optional<graphcap::liveness::free_watch> watch;
    watch.emplace();
    if (!watch->active()) {
      report.note("free watch inactive: " + watch->reason());
    }
    // An arm run with the watch stopped; started again after it (outside the timed calls: the
    // next watched arm's first replay then checks in full, 1 of its `launches` calls).
    const auto unwatched = [&](std::vector<double>& samples, auto call) {
      return [&samples, &watch, stream, call](bool record) {
        watch.reset();
        const double t = bench::per_call(stream, launches, call);
        watch.emplace();
        if (record) {
          samples.push_back(t);
        }
      };
    };
    std::vector<double> raw_times;
    std::vector<double> watched_times;
    std::vector<double> unwatched_times;
    std::vector<double> raw_unwatched_times;
    std::vector<double> after_free_times;
    bench::interleave(
        bench::scaled(31), 3,
        {bench::per_call_arm(raw_times, stream, launches, [&] { raw.replay(stream); }),
         bench::per_call_arm(watched_times, stream, launches, [&] { on.replay(stream); }),
         unwatched(unwatched_times, [&] { on.replay(stream); }),
         unwatched(raw_unwatched_times, [&] { raw.replay(stream); }),
         [&](bool record) { // one replay right after a free: the full check comes back
           float* scratch = nullptr;
           bench::check(cudaMalloc(&scratch, 256), "cudaMalloc");
           bench::check(cudaFree(scratch), "cudaFree");
           bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
           const auto start = bench::steady::now();
           on.replay(stream);
           const auto stop = bench::steady::now();
           bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
           if (record) {
             after_free_times.push_back(bench::micros(start, stop));
           }
         }});
    const std::string metric = "liveness with a free watch: replay call";
    report.add(metric, inputs, "raw cudaGraphLaunch", "us", raw_times);
    report.add(metric, inputs, "graphcap liveness::check + free_watch", "us", watched_times);
    report.add(metric, inputs, "graphcap liveness::check, no watch", "us", unwatched_times);
    report.add(metric, inputs, "raw cudaGraphLaunch, no watch", "us", raw_unwatched_times);
    report.add("liveness with a free watch: the replay after a free", inputs,
               "graphcap liveness::check + free_watch", "us", after_free_times);
    watch.reset();
    for (int i = 0; i < inputs; ++i) {
      bench::check(cudaFree(table.pointers[i]), "cudaFree");
    }
  }
}

} // namespace

int main() {
  if (!bench::device_present("bench_liveness")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  bench::report report("bench_liveness",
                       "liveness::check with a free watch against raw replays, nothing freed");
  replay_with_watch(report, stream, capture_stream);
  report.finish();
  return 0;
}
