// bench_family_memory (issue #46): a family's device memory, known before it is committed to.
// A family of 64 batch sizes (1, 16, 24, ..., 512) of a 200-kernel step (activations of batch x
// 1024 floats from the family's pool, each freed once the next layer read it; the last one's
// first float copied to a result slot of the key). Three runs (BENCH_SCALE scales them), each:
//  - ledger: family A's ledger().predicted_bytes(), against the drop of cudaMemGetInfo's free
//    figure around capture_all() of family B of the same keys (A kept alive, nothing else
//    running): goal within 2% or 2 MiB, whichever is larger; and A's per-key figures add up to
//    its total (the rows' sum minus the total, 0 bytes);
//  - budget: capture_all() under a byte_budget of half of A's total: the measured drop against
//    the budget (never over), and the keys kept against a bound on the densest ladder: the keys
//    kept plus those the budget's remainder (budget - drop) pays for at the budgeted family's own
//    executable bytes per key (every key is 202 nodes, the smaller keys reuse the largest one's
//    pool): goal within one key. The densest by A's per-key shares is listed (A's shares spread
//    A's measured executables over its keys, not what a key adds: session 22);
//  - sleep: family C's release_executables(): cudaMemGetInfo's figure awake against asleep (the
//    driver keeps executables' memory: benchmark/probes/executable_memory_release.cu), what the
//    ledger counts as held; then the wake to the first correct replay of every key, eagerly
//    (restore_executables() + a replay each) and lazily (a replay each: the instantiation at the
//    first replay), against capturing the 64 keys again (capture_all of a new family); goal
//    <= 0.1x. Then release_executables(executable_memory::give_back): what cudaMemGetInfo
//    gained, family B asleep against awake (goal <= 1%), and the eager wake after it.
//  - a family asleep as a server puts one to sleep: family D of pool::sleepable_shared graphs,
//    its pool slept (backup::none) and its executables released with the cache given back; what
//    it holds asleep (its ledger total awake less cudaMemGetInfo's gain), and the wake (pool,
//    restore_executables, a correct replay of every key) against its own capture_all + replays;
//  - the floor of a wake in plain CUDA (the same steps on two preallocated buffers): capture +
//    instantiate + a correct replay of every key, against destroying the executables and
//    instantiating the kept templates again + the replays, and the replays alone (what any wake
//    to a replay of every key pays).
// Every family stays alive to the end: the driver keeps destroyed executables' memory for the
// context's next instantiations, which would make every later measure read 0.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

__global__ void layer_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    out[i] = in[i] + 1.0F;
  }
}

__global__ void result_kernel(const float* in, float* result) {
  *result = in[0];
}

constexpr int layers = 200;
constexpr int hidden = 1024;
constexpr double mib = 1024.0 * 1024.0;

std::vector<std::size_t> batch_sizes() {
  std::vector<std::size_t> sizes{1};
  for (std::size_t batch = 16; batch <= 512; batch += 8) {
    sizes.push_back(batch);
  }
  return sizes; // 64 sizes
}

using family = graphcap::graph_family<>;

/// A family of the same keys whose pool can sleep (pool::sleepable_shared).
using sleepy_family =
    graphcap::graph_family<std::size_t, graphcap::graph_with<graphcap::pool::sleepable_shared>>;

/// The step for `batch`: a memset, `layers` kernels, the result of key `slot` into `results`.
template <class Scope>
void step(std::size_t batch, Scope& cap, float* results, std::size_t slot) {
  const int n = static_cast<int>(batch) * hidden;
  float* activation = cap.template allocate<float>(static_cast<std::size_t>(n));
  bench::check(
      cudaMemsetAsync(activation, 0, sizeof(float) * static_cast<std::size_t>(n), cap.stream()),
      "cudaMemsetAsync");
  for (int layer = 0; layer < layers; ++layer) {
    float* next = cap.template allocate<float>(static_cast<std::size_t>(n));
    layer_kernel<<<(n + 255) / 256, 256, 0, cap.stream()>>>(activation, next, n);
    cap.deallocate(activation);
    activation = next;
  }
  result_kernel<<<1, 1, 0, cap.stream()>>>(activation, results + slot);
  cap.deallocate(activation);
}

struct bench_state {
  cudaStream_t stream = nullptr;
  std::vector<std::size_t> keys = batch_sizes();
  float* results = nullptr; // one slot per key
  std::vector<std::unique_ptr<family>> alive;

  std::size_t slot_of(std::size_t key) const {
    return static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
  }
  std::vector<std::unique_ptr<sleepy_family>> sleepy_alive;
  float* raw_in = nullptr; // the raw floor's two buffers, of the largest key's activation
  float* raw_out = nullptr;
  std::vector<cudaGraph_t> raw_templates; // kept to the end, as every family
  std::vector<cudaGraphExec_t> raw_executables;

  auto work() {
    return [this](std::size_t batch, auto& cap) { step(batch, cap, results, slot_of(batch)); };
  }
  /// A new family, kept alive to the end in `kept`.
  template <class Family>
  static Family& make_in(std::vector<std::unique_ptr<Family>>& kept) {
    kept.push_back(
        std::make_unique<Family>(graphcap::family_options<std::size_t>{.progress_line = false}));
    return *kept.back();
  }
  family& make() { return make_in(alive); }
  sleepy_family& make_sleepy() { return make_in(sleepy_alive); }
  std::size_t free_bytes() const { return bench::free_bytes_after(stream); }
  /// Replays every key of `f` and checks its result (layers).
  template <class Family>
  bool replay_all_correct(Family& f) {
    return launched_all_correct([&] {
      for (const std::size_t key : keys) {
        f.replay_at_least(key, stream);
      }
    });
  }
  /// Clears the result slots, runs `launch_all` (a launch of every key), and checks every key's
  /// result (layers).
  template <class Launch>
  bool launched_all_correct(Launch&& launch_all) {
    bench::check(cudaMemsetAsync(results, 0, sizeof(float) * keys.size(), stream), "memset");
    launch_all();
    std::vector<float> host(keys.size());
    bench::check(cudaMemcpyAsync(host.data(), results, sizeof(float) * keys.size(),
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
    bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return std::all_of(host.begin(), host.end(), [](float v) { return v == float{layers}; });
  }
};

/// The floor of a wake, in plain CUDA on two preallocated buffers (milliseconds each, a correct
/// replay of every key included in each, as in the family's arms): the keys' step captured,
/// instantiated and replayed (capturing again); the executables destroyed (not timed) and the
/// kept templates instantiated again and replayed (a wake by instantiation, as
/// release_executables() + restore_executables(): the driver's cache serves the new ones); the
/// executables replayed alone (any wake's floor). The templates and the last executables stay
/// in `state` (the cache of destroyed ones would serve later measures).
struct raw_floor {
  double capture_again_ms;
  double wake_ms;
  double replays_ms;
};
raw_floor raw_wake_floor(bench_state& state) {
  const cudaStream_t stream = state.stream;
  const std::size_t first = state.raw_templates.size();
  const auto instantiate_all = [&] {
    for (std::size_t i = first; i < first + state.keys.size(); ++i) {
      cudaGraphExec_t exec = nullptr;
      bench::check(cudaGraphInstantiate(&exec, state.raw_templates[i], 0), "instantiate");
      state.raw_executables.push_back(exec);
    }
  };
  const auto replay_all_correct = [&] {
    const std::size_t last = state.raw_executables.size();
    if (!state.launched_all_correct([&] {
          for (std::size_t i = last - state.keys.size(); i < last; ++i) {
            bench::check(cudaGraphLaunch(state.raw_executables[i], stream), "cudaGraphLaunch");
          }
        })) {
      std::fprintf(stderr, "bench_family_memory: a raw replay was wrong\n");
      std::exit(1);
    }
  };

  auto start = bench::steady::now();
  for (const std::size_t batch : state.keys) {
    const int n = static_cast<int>(batch) * hidden;
    cudaGraph_t graph = nullptr;
    bench::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
    bench::check(
        cudaMemsetAsync(state.raw_in, 0, sizeof(float) * static_cast<std::size_t>(n), stream),
        "cudaMemsetAsync");
    float* in = state.raw_in;
    float* out = state.raw_out;
    for (int layer = 0; layer < layers; ++layer) {
      layer_kernel<<<(n + 255) / 256, 256, 0, stream>>>(in, out, n);
      std::swap(in, out);
    }
    result_kernel<<<1, 1, 0, stream>>>(in, state.results + state.slot_of(batch));
    bench::check(cudaStreamEndCapture(stream, &graph), "end capture");
    state.raw_templates.push_back(graph);
  }
  instantiate_all();
  replay_all_correct();
  raw_floor floor{};
  floor.capture_again_ms = bench::micros(start, bench::steady::now()) / 1000.0;
  for (std::size_t i = 0; i < state.keys.size(); ++i) { // released, as release_executables()
    bench::check(cudaGraphExecDestroy(state.raw_executables.back()), "cudaGraphExecDestroy");
    state.raw_executables.pop_back();
  }
  start = bench::steady::now();
  instantiate_all();
  replay_all_correct();
  floor.wake_ms = bench::micros(start, bench::steady::now()) / 1000.0;
  start = bench::steady::now();
  replay_all_correct();
  floor.replays_ms = bench::micros(start, bench::steady::now()) / 1000.0;
  return floor;
}

double as_mib(std::size_t bytes) {
  return static_cast<double>(bytes) / mib;
}
double drop(std::size_t before, std::size_t after) {
  return before > after ? static_cast<double>(before - after)
                        : -static_cast<double>(after - before);
}

/// The densest ladder `ledger` says fits `budget`: its largest key that fits alone, then the
/// cheapest of the smaller keys while they fit.
std::size_t densest(const graphcap::family_ledger<std::size_t>& ledger, std::size_t budget) {
  for (std::size_t top = ledger.rows.size(); top-- > 0;) {
    if (ledger.rows[top].would_add_bytes > budget) {
      continue;
    }
    std::vector<std::size_t> costs;
    for (std::size_t i = 0; i < top; ++i) {
      costs.push_back(ledger.rows[i].would_add_bytes);
    }
    std::sort(costs.begin(), costs.end());
    std::size_t spent = ledger.rows[top].would_add_bytes;
    std::size_t count = 1;
    for (const std::size_t cost : costs) {
      if (spent + cost > budget) {
        break;
      }
      spent += cost;
      ++count;
    }
    return count;
  }
  return 0;
}

} // namespace

int main() {
  if (!bench::device_present("bench_family_memory")) {
    return 0;
  }
  const bench::owned_stream stream;
  bench_state state;
  state.stream = stream;
  bench::check(cudaMalloc(&state.results, sizeof(float) * state.keys.size()), "cudaMalloc");
  const std::size_t largest = state.keys.back() * hidden;
  bench::check(cudaMalloc(&state.raw_in, sizeof(float) * largest), "cudaMalloc");
  bench::check(cudaMalloc(&state.raw_out, sizeof(float) * largest), "cudaMalloc");
  bench::report report("bench_family_memory", "a family of 64 batch sizes (1..512) of a "
                                              "200-kernel step: ledger, budget, sleep");
  std::vector<double> predicted_mib, measured_mib, error_percent, sum_error, budget_mib,
      budget_drop_mib, kept_keys, densest_keys, awake_mib, asleep_mib, held_mib, eager_ratio,
      lazy_ratio, eager_ms, lazy_ms, capture_ms, given_back_mib, asleep_given_mib, ledger_given_mib,
      given_ms, given_ratio, budget_ledger_mib, densest_bound, sleepy_awake_mib, sleepy_asleep_mib,
      sleepy_capture_ms, sleepy_wake_ms, sleepy_ratio, raw_again_ms, raw_wake_ms, raw_replays_ms,
      raw_wake_ratio, raw_replays_ratio;
  const int runs = std::max(1, bench::scaled(3));
  for (int run = 0; run < runs; ++run) {
    // ---- ledger --------------------------------------------------------------------------
    family& a = state.make();
    bench::check(cudaStreamSynchronize(stream), "sync");
    std::fprintf(stdout, "run %d\n", run);
    static_cast<void>(a.capture_all(state.keys, stream, state.work()));
    const graphcap::family_ledger<std::size_t> ledger = a.ledger();
    std::size_t rows = ledger.stream_bytes; // the family's own stream is in no row
    for (const auto& row : ledger.rows) {
      rows += row.pool_device_bytes + row.executable_bytes;
    }
    sum_error.push_back(drop(rows, ledger.total_bytes()));
    const std::size_t predicted = ledger.predicted_bytes();
    std::size_t before = state.free_bytes();
    family& b = state.make();
    static_cast<void>(b.capture_all(state.keys, stream, state.work()));
    const double measured = drop(before, state.free_bytes());
    predicted_mib.push_back(as_mib(predicted));
    measured_mib.push_back(measured / mib);
    error_percent.push_back(100.0 * (static_cast<double>(predicted) - measured) / measured);
    if (run == 0) {
      std::printf("%s", b.report().c_str());
    }
    // ---- budget ---------------------------------------------------------------------------
    const std::size_t budget = ledger.total_bytes() / 2;
    before = state.free_bytes();
    family& c = state.make();
    const auto result =
        c.capture_all(state.keys, graphcap::byte_budget{budget}, stream, state.work());
    budget_drop_mib.push_back(drop(before, state.free_bytes()) / mib);
    budget_ledger_mib.push_back(as_mib(c.ledger().total_bytes())); // what it says it took
    budget_mib.push_back(as_mib(budget));
    kept_keys.push_back(static_cast<double>(c.size()));
    // A bound on the densest ladder under the budget: every key is the same 202 nodes and the
    // smaller keys reuse the largest one's pool, so a ladder of more keys costs C's drop plus
    // C's executable bytes per key for each more: what the budget's remainder pays for.
    std::size_t executables = 0;
    for (const auto& row : c.ledger().rows) {
      executables += row.executable_bytes;
    }
    const double remainder =
        std::max(0.0, static_cast<double>(budget) - budget_drop_mib.back() * mib);
    const double per_key = static_cast<double>(executables) / static_cast<double>(c.size());
    densest_bound.push_back(static_cast<double>(c.size()) + std::floor(remainder / per_key));
    densest_keys.push_back(static_cast<double>(densest(ledger, budget)));
    if (run == 0 && !result.left_out.empty()) {
      std::printf("budget %zu bytes: %zu keys kept; first left out: %s\n", budget, c.size(),
                  result.left_out.front().reason.c_str());
    }
    // ---- sleep and wake ---------------------------------------------------------------------
    const std::size_t awake_free = state.free_bytes();
    const std::size_t held_awake = b.ledger().total_bytes();
    b.release_executables();
    const std::size_t asleep_free = state.free_bytes();
    awake_mib.push_back(as_mib(held_awake));
    asleep_mib.push_back((static_cast<double>(held_awake) - drop(asleep_free, awake_free)) / mib);
    held_mib.push_back(as_mib(b.ledger().executable_held_bytes));
    auto start = bench::steady::now();
    b.restore_executables();
    const bool eager_ok = state.replay_all_correct(b);
    const double eager = bench::micros(start, bench::steady::now()) / 1000.0;
    b.release_executables();
    start = bench::steady::now();
    const bool lazy_ok = state.replay_all_correct(b);
    const double lazy = bench::micros(start, bench::steady::now()) / 1000.0;
    start = bench::steady::now();
    family& again = state.make();
    static_cast<void>(again.capture_all(state.keys, stream, state.work()));
    const bool again_ok = state.replay_all_correct(again);
    const double recapture = bench::micros(start, bench::steady::now()) / 1000.0;
    // ---- asleep with the driver's cache given back --------------------------------------------
    const std::size_t before_give_back = state.free_bytes();
    const std::size_t awake_again = b.ledger().total_bytes();
    b.release_executables(graphcap::executable_memory::give_back);
    const double gained = drop(state.free_bytes(), before_give_back);
    given_back_mib.push_back(gained / mib);
    asleep_given_mib.push_back((static_cast<double>(awake_again) - gained) / mib);
    ledger_given_mib.push_back(as_mib(b.ledger().executable_given_back_bytes));
    start = bench::steady::now();
    b.restore_executables();
    const bool given_ok = state.replay_all_correct(b);
    const double given = bench::micros(start, bench::steady::now()) / 1000.0;
    if (!eager_ok || !lazy_ok || !again_ok || !given_ok) {
      std::fprintf(stderr,
                   "bench_family_memory: a replay after the wake was wrong (eager %d, "
                   "lazy %d, recapture %d, after give_back %d)\n",
                   eager_ok, lazy_ok, again_ok, given_ok);
      return 1;
    }
    // ---- a family asleep: its pool slept, its executables released, the cache given back ----
    start = bench::steady::now();
    sleepy_family& d = state.make_sleepy();
    static_cast<void>(d.capture_all(state.keys, stream, state.work()));
    const bool sleepy_first = state.replay_all_correct(d);
    sleepy_capture_ms.push_back(bench::micros(start, bench::steady::now()) / 1000.0);
    const std::size_t sleepy_awake = d.ledger().total_bytes();
    const std::size_t before_sleep = state.free_bytes();
    graphcap::sleepable_pool_handle sleepy_pool{d.pool()};
    sleepy_pool.sleep();
    d.release_executables(graphcap::executable_memory::give_back);
    const double sleepy_gain = drop(state.free_bytes(), before_sleep);
    sleepy_awake_mib.push_back(as_mib(sleepy_awake));
    sleepy_asleep_mib.push_back((static_cast<double>(sleepy_awake) - sleepy_gain) / mib);
    start = bench::steady::now();
    sleepy_pool.wake();
    d.restore_executables();
    const bool sleepy_ok = state.replay_all_correct(d);
    sleepy_wake_ms.push_back(bench::micros(start, bench::steady::now()) / 1000.0);
    sleepy_ratio.push_back(sleepy_wake_ms.back() / sleepy_capture_ms.back());
    if (!sleepy_first || !sleepy_ok) {
      std::fprintf(stderr,
                   "bench_family_memory: the sleepable family's replay was wrong (before "
                   "its sleep %d, after its wake %d)\n",
                   sleepy_first, sleepy_ok);
      return 1;
    }
    // ---- the same wake in plain CUDA: its floor ----------------------------------------------
    const raw_floor floor = raw_wake_floor(state);
    raw_again_ms.push_back(floor.capture_again_ms);
    raw_wake_ms.push_back(floor.wake_ms);
    raw_replays_ms.push_back(floor.replays_ms);
    raw_wake_ratio.push_back(floor.wake_ms / floor.capture_again_ms);
    raw_replays_ratio.push_back(floor.replays_ms / floor.capture_again_ms);
    eager_ms.push_back(eager);
    lazy_ms.push_back(lazy);
    capture_ms.push_back(recapture);
    eager_ratio.push_back(eager / recapture);
    lazy_ratio.push_back(lazy / recapture);
    given_ms.push_back(given);
    given_ratio.push_back(given / recapture);
  }
  report.add("ledger: 64 keys", 64, "predicted from family A", "MiB", predicted_mib);
  report.add("ledger: 64 keys", 64, "measured drop around B's capture_all", "MiB", measured_mib);
  report.add("ledger error", 64, "predicted - measured", "%", error_percent);
  report.add("ledger rows' sum - total", 64, "family A", "bytes", sum_error);
  report.add("budget", 64, "byte_budget", "MiB", budget_mib);
  report.add("budget", 64, "measured drop", "MiB", budget_drop_mib);
  report.add("budget", 64, "the budgeted family's ledger total", "MiB", budget_ledger_mib);
  report.add("budget ladder", 64, "keys kept", "keys", kept_keys);
  report.add("budget ladder", 64, "densest by A's per-key shares (listed)", "keys", densest_keys);
  report.add("budget ladder", 64, "bound: kept + what the remainder pays at C's bytes per key",
             "keys", densest_bound);
  report.add("sleep", 64, "awake (ledger total)", "MiB", awake_mib);
  report.add("sleep", 64, "asleep (awake - cudaMemGetInfo's gain)", "MiB", asleep_mib);
  report.add("sleep", 64, "ledger: held by the driver", "MiB", held_mib);
  report.add("sleep, cache given back", 64, "cudaMemGetInfo's gain", "MiB", given_back_mib);
  report.add("sleep, cache given back", 64, "asleep (awake - gain)", "MiB", asleep_given_mib);
  report.add("sleep, cache given back", 64, "ledger: given back", "MiB", ledger_given_mib);
  report.add("wake to correct replays", 64, "capture_all again", "ms", capture_ms);
  report.add("wake to correct replays", 64, "restore_executables (eager)", "ms", eager_ms);
  report.add("wake to correct replays", 64, "lazy (instantiated at first replay)", "ms", lazy_ms);
  report.add("wake / capture again", 64, "eager", "x", eager_ratio);
  report.add("wake / capture again", 64, "lazy", "x", lazy_ratio);
  report.add("wake to correct replays", 64, "restore after give_back (eager)", "ms", given_ms);
  report.add("wake / capture again", 64, "eager after give_back", "x", given_ratio);
  report.add("family asleep (sleepable pool)", 64, "awake (ledger total)", "MiB", sleepy_awake_mib);
  report.add("family asleep (sleepable pool)", 64,
             "asleep: pool slept, executables released, cache given back", "MiB",
             sleepy_asleep_mib);
  report.add("wake to correct replays, sleepable pool", 64, "capture_all + replays", "ms",
             sleepy_capture_ms);
  report.add("wake to correct replays, sleepable pool", 64, "wake + restore_executables + replays",
             "ms", sleepy_wake_ms);
  report.add("wake / capture again", 64, "sleepable pool: wake + restore", "x", sleepy_ratio);
  report.add("raw floor of a wake", 64, "capture + instantiate + replays", "ms", raw_again_ms);
  report.add("raw floor of a wake", 64, "instantiate + replays", "ms", raw_wake_ms);
  report.add("raw floor of a wake", 64, "replays alone", "ms", raw_replays_ms);
  report.add("wake / capture again", 64, "raw: instantiate + replays", "x", raw_wake_ratio);
  report.add("wake / capture again", 64, "raw: replays alone", "x", raw_replays_ratio);
  report.note("goals: ledger error within 2% or 2 MiB; budget drop <= budget, kept >= densest "
              "- 1; asleep <= 1% of awake (or the probe shows the driver keeps it); wake <= 0.1x");
  report.finish();
  for (const cudaGraphExec_t exec : state.raw_executables) {
    bench::check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  }
  for (const cudaGraph_t graph : state.raw_templates) {
    bench::check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  }
  bench::check(cudaFree(state.raw_in), "cudaFree");
  bench::check(cudaFree(state.raw_out), "cudaFree");
  bench::check(cudaFree(state.results), "cudaFree");
  return 0;
}
