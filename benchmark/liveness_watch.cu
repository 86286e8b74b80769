// bench_liveness (issue 32, goal 1): liveness::check's replay with a liveness::free_watch running,
// against raw cudaGraphLaunch, for 1 to 64 external inputs and nothing freed between replays:
//   raw cudaGraphLaunch                    the hand-written replay (the watch running)
//   graphcap liveness::check + free_watch  one load instead of one driver query per input
//   graphcap liveness::check, no watch     the per-input queries (the watch stopped for the arm)
//   raw cudaGraphLaunch, no watch          what the watch's CUPTI subscription costs other calls
// and the replay right after a cudaFree of unrelated memory (the full check the free brings back),
// for the watched graph, the same graph with the watch stopped and the raw launch. Every arm's
// sample is the same measure: the mean host time of one replay call over `launches` calls. In the
// after-free arms each call follows its own cudaMalloc and cudaFree of 256 unrelated bytes (not
// timed; cudaFree waits for the device, so each of those calls meets an idle stream, which the
// raw after-free arm shows). Until session 17 the after-free arm timed one call per round against
// the others' means over 200 (#50). Links graphcap::free_watch (CUPTI).
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

/// The mean host time of `calls` replay calls, each right after a cudaMalloc and cudaFree of
/// unrelated memory (the allocation and the free are not timed).
template <class Call>
double per_call_after_free(cudaStream_t stream, int calls, Call&& call) {
  bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  double total = 0;
  for (int i = 0; i < calls; ++i) {
    float* scratch = nullptr;
    bench::check(cudaMalloc(&scratch, 256), "cudaMalloc");
    bench::check(cudaFree(scratch), "cudaFree");
    const auto start = bench::steady::now();
    call();
    const auto stop = bench::steady::now();
    total += bench::micros(start, stop);
  }
  bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return total / calls;
}

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
    const auto unwatched = [&](std::vector<double>& samples, auto measure) {
      return [&samples, &watch, measure](bool record) {
        watch.reset();
        const double t = measure();
        watch.emplace();
        if (record) {
          samples.push_back(t);
        }
      };
    };
    const auto batch = [&](auto call) {
      return [stream, call] { return bench::per_call(stream, launches, call); };
    };
    const auto after_free = [&](auto call) {
      return [stream, call] { return per_call_after_free(stream, launches, call); };
    };
    const auto watched = [](std::vector<double>& samples, auto measure) {
      return [&samples, measure](bool record) {
        const double t = measure();
        if (record) {
          samples.push_back(t);
        }
      };
    };
    const auto replay_raw = [&] { raw.replay(stream); };
    const auto replay_checked = [&] { on.replay(stream); };
    std::vector<double> raw_times;
    std::vector<double> watched_times;
    std::vector<double> unwatched_times;
    std::vector<double> raw_unwatched_times;
    std::vector<double> raw_after_free;
    std::vector<double> watched_after_free;
    std::vector<double> unwatched_after_free;
    bench::interleave(bench::scaled(31), 3,
                      {watched(raw_times, batch(replay_raw)),
                       watched(watched_times, batch(replay_checked)),
                       unwatched(unwatched_times, batch(replay_checked)),
                       unwatched(raw_unwatched_times, batch(replay_raw)),
                       watched(raw_after_free, after_free(replay_raw)),
                       watched(watched_after_free, after_free(replay_checked)),
                       unwatched(unwatched_after_free, after_free(replay_checked))});
    const std::string metric = "liveness with a free watch: replay call";
    report.add(metric, inputs, "raw cudaGraphLaunch", "us", raw_times);
    report.add(metric, inputs, "graphcap liveness::check + free_watch", "us", watched_times);
    report.add(metric, inputs, "graphcap liveness::check, no watch", "us", unwatched_times);
    report.add(metric, inputs, "raw cudaGraphLaunch, no watch", "us", raw_unwatched_times);
    const std::string after = "liveness with a free watch: the replay after a free";
    report.add(after, inputs, "raw cudaGraphLaunch", "us", raw_after_free);
    report.add(after, inputs, "graphcap liveness::check + free_watch", "us", watched_after_free);
    report.add(after, inputs, "graphcap liveness::check, no watch", "us", unwatched_after_free);
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
