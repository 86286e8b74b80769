// bench_family_memory (issue #46): a family's device memory, known before it is committed to.
// A family of 64 batch sizes (1, 16, 24, ..., 512) of a 200-kernel step (activations of batch x
// 1024 floats from the family's pool, each freed once the next layer read it; the last one's
// first float copied to a result slot of the key). Three runs (BENCH_SCALE scales them), each:
//  - ledger: family A's ledger().predicted_bytes(), against the drop of cudaMemGetInfo's free
//    figure around capture_all() of family B of the same keys (A kept alive, nothing else
//    running): goal within 2% or 2 MiB, whichever is larger; and A's per-key figures add up to
//    its total (the rows' sum minus the total, 0 bytes);
//  - budget: capture_all() under a byte_budget of half of A's total: the measured drop against
//    the budget (never over), and the keys kept against the densest ladder A's per-key figures
//    say fits (the largest key that fits, then the cheapest others: goal within one key);
//  - sleep: family C's release_executables(): cudaMemGetInfo's figure awake against asleep (the
//    driver keeps executables' memory: benchmark/probes/executable_memory_release.cu), what the
//    ledger counts as held; then the wake to the first correct replay of every key, eagerly
//    (restore_executables() + a replay each) and lazily (a replay each: the instantiation at the
//    first replay), against capturing the 64 keys again (capture_all of a new family); goal
//    <= 0.1x. Then release_executables(executable_memory::give_back): what cudaMemGetInfo
//    gained, family B asleep against awake (goal <= 1%), and the eager wake after it.
// Every family stays alive to the end: the driver keeps destroyed executables' memory for the
// context's next instantiations, which would make every later measure read 0.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>

#include "harness.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
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

/// The step for `batch`: a memset, `layers` kernels, the result of key `slot` into `results`.
void step(std::size_t batch, family::scope& cap, float* results, std::size_t slot) {
  const int n = static_cast<int>(batch) * hidden;
  float* activation = cap.allocate<float>(static_cast<std::size_t>(n));
  bench::check(
      cudaMemsetAsync(activation, 0, sizeof(float) * static_cast<std::size_t>(n), cap.stream()),
      "cudaMemsetAsync");
  for (int layer = 0; layer < layers; ++layer) {
    float* next = cap.allocate<float>(static_cast<std::size_t>(n));
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
  auto work() {
    return [this](std::size_t batch, family::scope& cap) {
      step(batch, cap, results, slot_of(batch));
    };
  }
  family& make() {
    alive.push_back(
        std::make_unique<family>(graphcap::family_options<std::size_t>{.progress_line = false}));
    return *alive.back();
  }
  std::size_t free_bytes() const {
    bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::size_t free = 0;
    std::size_t total = 0;
    bench::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
  }
  /// Replays every key of `f` and checks its result (layers).
  bool replay_all_correct(family& f) {
    bench::check(cudaMemsetAsync(results, 0, sizeof(float) * keys.size(), stream), "memset");
    for (const std::size_t key : keys) {
      f.replay_at_least(key, stream);
    }
    std::vector<float> host(keys.size());
    bench::check(cudaMemcpyAsync(host.data(), results, sizeof(float) * keys.size(),
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
    bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return std::all_of(host.begin(), host.end(), [](float v) { return v == float{layers}; });
  }
};

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
  bench::report report("bench_family_memory", "a family of 64 batch sizes (1..512) of a "
                                              "200-kernel step: ledger, budget, sleep");
  std::vector<double> predicted_mib, measured_mib, error_percent, sum_error, budget_mib,
      budget_drop_mib, kept_keys, densest_keys, awake_mib, asleep_mib, held_mib, eager_ratio,
      lazy_ratio, eager_ms, lazy_ms, capture_ms, given_back_mib, asleep_given_mib, ledger_given_mib,
      given_ms, given_ratio, budget_ledger_mib;
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
  report.add("budget ladder", 64, "densest by A's ledger", "keys", densest_keys);
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
  report.note("goals: ledger error within 2% or 2 MiB; budget drop <= budget, kept >= densest "
              "- 1; asleep <= 1% of awake (or the probe shows the driver keeps it); wake <= 0.1x");
  report.finish();
  bench::check(cudaFree(state.results), "cudaFree");
  return 0;
}
