// benchmark/harness.hpp - what every benchmark case shares: a device check, owned streams and
// device memory, interleaved rounds, median and p99, a printed table, and the results as CSV and
// JSON (into $OUT when set).
//
// A case runs each arm (graphcap, the hand-written raw-CUDA version, ...) in the same process,
// round by round, in an order shuffled each round (a fixed seed: every run the same), so that
// clock boosts, other tenants and thermal drift fall on every arm alike, and so that no arm always
// runs right after the same neighbour: whatever one arm leaves behind (memory the driver releases
// later, caches) would otherwise land on the same other arm every round. Each arm's
// closure times itself and appends its samples; the harness only orders the calls and summarizes.
//
// Results are long-format rows: (metric, param, arm) -> median, p99, mean, min, samples, unit,
// and the samples themselves, in round order. The first arm added for a (metric, param) is the
// baseline of the table's ratio column: the median of the per-round ratios (sample i of the arm
// over sample i of the baseline, taken in the same round), with a 95% confidence interval; a
// ratio of medians only where the sample counts differ. Per-round ratios cancel what drifts
// between rounds (clocks, other tenants), so they repeat where a ratio of medians wanders.
// Warm-up lasts at least BENCH_WARM_SECONDS (0.5 s the first time in a process, then 0.1 s), so
// that the GPU reaches steady clocks; the recorded rounds go on past the asked number until they
// have lasted BENCH_MIN_SECONDS (default 0.5 s), up to 8 times as many, so that a short sample
// gets more rounds. Benchmarks are not tests: nothing here asserts a time.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace bench {

/// Aborts the benchmark with the CUDA error's name: a failed call makes every number meaningless.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "benchmark: %s failed: %s (%s)\n", what, cudaGetErrorName(status),
                 cudaGetErrorString(status));
    std::exit(EXIT_FAILURE);
  }
}

/// True when a CUDA device is usable; otherwise says so (the caller then exits 0: built, not run).
inline bool device_present(const char* name) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("%s: no CUDA device present (%s); built, not run.\n", name,
                status == cudaSuccess ? "0 devices" : cudaGetErrorName(status));
    static_cast<void>(cudaGetLastError());
    return false;
  }
  return true;
}

/// A non-blocking stream, destroyed (checked) at scope exit. It converts to cudaStream_t, so a
/// case passes it wherever a stream is taken, graphcap's stream_ref included.
class owned_stream {
public:
  owned_stream() {
    check(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  owned_stream(const owned_stream&) = delete;
  owned_stream& operator=(const owned_stream&) = delete;
  owned_stream(owned_stream&&) = delete;
  owned_stream& operator=(owned_stream&&) = delete;
  ~owned_stream() { check(cudaStreamDestroy(handle_), "cudaStreamDestroy"); }

  operator cudaStream_t() const noexcept { return handle_; } // NOLINT: implicit, as the handle

private:
  cudaStream_t handle_ = nullptr;
};

/// `count` Ts of device memory, freed (checked) at scope exit; converts to T*, as cudaMalloc's
/// pointer would be used.
template <class T>
class device_array {
public:
  explicit device_array(std::size_t count) {
    check(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)), "cudaMalloc");
  }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  device_array(device_array&&) = delete;
  device_array& operator=(device_array&&) = delete;
  ~device_array() { check(cudaFree(data_), "cudaFree"); }

  operator T*() const noexcept { return data_; } // NOLINT: implicit, as the pointer

private:
  T* data_ = nullptr;
};

/// cudaMemGetInfo's free bytes once `stream`'s work is done: what the memory cases' drops are
/// read from.
inline std::size_t free_bytes_after(cudaStream_t stream) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::size_t free = 0;
  std::size_t total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

using steady = std::chrono::steady_clock;

/// Microseconds between two time points.
inline double micros(steady::time_point start, steady::time_point stop) {
  return std::chrono::duration<double, std::micro>(stop - start).count();
}

/// Runs `steps` calls of `step` on `stream`, each followed by a stream synchronize, and (when
/// `record`) appends each call's host time, synchronize included: a loop that reads its result
/// every step. `before` runs ahead of each step, outside the timing.
template <class Step, class Before>
void synchronized_steps(cudaStream_t stream, int steps, std::vector<double>& samples, bool record,
                        Step&& step, Before&& before) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (int i = 0; i < steps; ++i) {
    before();
    const auto t0 = steady::now();
    step();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto t1 = steady::now();
    if (record) {
      samples.push_back(micros(t0, t1));
    }
  }
}

/// The same, with nothing to run ahead of each step.
template <class Step>
void synchronized_steps(cudaStream_t stream, int steps, std::vector<double>& samples, bool record,
                        Step&& step) {
  synchronized_steps(stream, steps, samples, record, step, [] {});
}

/// Number of repetitions, scaled by $BENCH_SCALE (e.g. 0.2 for a quick look, 3 for a long run).
inline int scaled(int repetitions) {
  const char* scale = std::getenv("BENCH_SCALE");
  if (scale == nullptr) {
    return repetitions;
  }
  const double factor = std::strtod(scale, nullptr);
  if (!(factor > 0.0)) {
    return repetitions;
  }
  return std::max(3, static_cast<int>(std::lround(repetitions * factor)));
}

struct summary {
  double median = 0;
  double p99 = 0;
  double mean = 0;
  double min = 0;
  std::size_t samples = 0;
};

/// A setting from the environment in seconds, or `fallback`.
inline double seconds_setting(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    return fallback;
  }
  const double value = std::strtod(text, nullptr);
  return value >= 0.0 ? value : fallback;
}

/// A median and its 95% confidence interval (distribution-free: order statistics).
struct interval {
  double median = 0;
  double low = 0;
  double high = 0;
};

/// The median of `values` with the ranks n/2 -+ 0.98 sqrt(n) as its 95% interval.
inline interval median_interval(std::vector<double> values) {
  interval result;
  if (values.empty()) {
    return result;
  }
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double half_width = 0.98 * std::sqrt(static_cast<double>(n));
  const double centre = static_cast<double>(n) / 2.0;
  const auto low = static_cast<std::size_t>(std::max(0.0, std::floor(centre - half_width)));
  const auto high = static_cast<std::size_t>(
      std::min(static_cast<double>(n - 1), std::ceil(centre + half_width)));
  result.median = values[n / 2];
  result.low = values[low];
  result.high = values[high];
  return result;
}

/// The ratio of `arm` to `baseline`: the median of per-round ratios with its interval where both
/// have one sample per round, else the ratio of medians (interval = that ratio).
inline interval paired_ratio(const std::vector<double>& arm, const std::vector<double>& baseline) {
  if (arm.empty() || baseline.empty()) {
    return {};
  }
  if (arm.size() == baseline.size()) {
    std::vector<double> ratios;
    ratios.reserve(arm.size());
    for (std::size_t i = 0; i < arm.size(); ++i) {
      if (baseline[i] > 0) {
        ratios.push_back(arm[i] / baseline[i]);
      }
    }
    return median_interval(std::move(ratios));
  }
  const double ratio = median_interval(arm).median / median_interval(baseline).median;
  return {ratio, ratio, ratio};
}

/// Median (upper middle for an even count), p99 (nearest rank), mean and minimum.
inline summary summarize(std::vector<double> values) {
  summary result;
  if (values.empty()) {
    return result;
  }
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  result.samples = n;
  result.median = values[n / 2];
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
  result.p99 = values[std::min(n, std::max<std::size_t>(rank, 1)) - 1];
  double sum = 0;
  for (const double value : values) {
    sum += value;
  }
  result.mean = sum / static_cast<double>(n);
  result.min = values.front();
  return result;
}

/// Runs at least `warmup` unrecorded rounds (and for at least the warm-up time, see the top of
/// this file), then at least `rounds` recorded rounds of every arm (more while they have lasted
/// less than BENCH_MIN_SECONDS, up to 8 times as many). Each round runs the arms in a new order,
/// shuffled with a fixed seed: each arm goes first, and follows each other arm, about equally
/// often. (Rotating the order is not enough: arm i would still follow arm i-1 in every round
/// where it is not first.) An arm receives whether the round is recorded and appends its own
/// samples when it is.
inline void interleave(int rounds, int warmup, const std::vector<std::function<void(bool)>>& arms) {
  static bool warmed_before = false; // the first case of a process warms the GPU up longest
  const double warm_seconds = seconds_setting("BENCH_WARM_SECONDS", warmed_before ? 0.1 : 0.5);
  const double min_seconds = seconds_setting("BENCH_MIN_SECONDS", 0.5);
  warmed_before = true;
  std::vector<std::size_t> order(arms.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::mt19937 shuffler(0x5eed5eedU); // the same orders in every run of the binary
  const auto run_round = [&](bool record) {
    std::shuffle(order.begin(), order.end(), shuffler);
    for (const std::size_t arm : order) {
      arms[arm](record);
    }
  };
  int round = 0;
  const auto warm_start = steady::now();
  while (round < warmup || micros(warm_start, steady::now()) < warm_seconds * 1e6) {
    run_round(false);
    ++round;
  }
  const auto start = steady::now();
  for (int recorded = 0; recorded < rounds * 8; ++recorded) {
    if (recorded >= rounds && micros(start, steady::now()) >= min_seconds * 1e6) {
      break;
    }
    run_round(true);
  }
}

/// The host time of `calls` consecutive calls of `call`, per call, in microseconds; the stream is
/// drained before (so that earlier work does not hold the launch queue) and after (not timed).
template <class Call>
double per_call(cudaStream_t stream, int calls, Call&& call) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const auto start = steady::now();
  for (int i = 0; i < calls; ++i) {
    call();
  }
  const auto stop = steady::now();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return micros(start, stop) / calls;
}

/// An interleave() arm whose sample is per_call(stream, calls, call), kept when the round is
/// recorded.
template <class Call>
std::function<void(bool)> per_call_arm(std::vector<double>& samples, cudaStream_t stream, int calls,
                                       Call call) {
  return [&samples, stream, calls, call](bool record) {
    const double t = per_call(stream, calls, call);
    if (record) {
      samples.push_back(t);
    }
  };
}

/// One case's results: rows to print, and to write as CSV and JSON.
class report {
public:
  struct row {
    std::string metric;
    std::string param;
    std::string arm;
    std::string unit;
    summary stats;
    std::vector<double> values; // in round order
    interval ratio;             // to the first arm of the same metric and param
  };

  /// `name` is the file stem (bench_replay -> bench_replay.csv/.json), `title` the table heading.
  report(std::string name, std::string title) : name_(std::move(name)), title_(std::move(title)) {
    cudaDeviceProp properties{};
    int device = 0;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaGetDeviceProperties(&properties, device) == cudaSuccess) {
      gpu_ = properties.name;
    }
    cudaDriverGetVersion(&driver_);
    cudaRuntimeGetVersion(&runtime_);
    const std::time_t now = std::time(nullptr);
    char date[32] = {};
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    date_ = date;
    std::printf("%s\n%s on %s (driver API %d, runtime %d), %s\n", name_.c_str(), title_.c_str(),
                gpu_.c_str(), driver_, runtime_, date_.c_str());
  }

  report(const report&) = delete;
  report& operator=(const report&) = delete;
  report(report&&) = delete;
  report& operator=(report&&) = delete;
  ~report() = default;

  void add(const std::string& metric, const std::string& param, const std::string& arm,
           const std::string& unit, const std::vector<double>& values) {
    interval ratio{1, 1, 1};
    for (const row& earlier : rows_) { // the baseline: the first arm of this metric and param
      if (earlier.metric == metric && earlier.param == param) {
        ratio = paired_ratio(values, earlier.values);
        break;
      }
    }
    rows_.push_back({metric, param, arm, unit, summarize(values), values, ratio});
  }
  void add(const std::string& metric, long long param, const std::string& arm,
           const std::string& unit, const std::vector<double>& values) {
    add(metric, std::to_string(param), arm, unit, values);
  }

  /// A free-form line printed under the table and kept in the JSON (a check's outcome, a caveat).
  void note(const std::string& text) { notes_.push_back(text); }

  /// Prints the table and writes <OUT>/<name>.csv and <OUT>/<name>.json (making <OUT> if it is
  /// missing). A file that cannot be written ends the process with a failure after the table is
  /// printed: a run whose figures are not stored must not look like one that is (#50: session
  /// 16's bench_sleep at 4 GiB wrote no CSV and exited 0).
  void finish() const {
    print_table();
    const char* out = std::getenv("OUT");
    if (out != nullptr && *out != '\0') {
      std::error_code ignored;
      std::filesystem::create_directories(out, ignored);
    }
    const bool csv = write_csv();
    const bool json = write_json();
    if (!csv || !json) {
      std::fprintf(stderr, "%s: the results were printed but not stored\n", name_.c_str());
      std::exit(EXIT_FAILURE);
    }
  }

private:
  void print_table() const {
    std::printf("%-34s %8s %-34s %12s %12s %8s %17s\n", "metric", "param", "arm", "median", "p99",
                "ratio", "95% interval");
    for (const row& entry : rows_) {
      std::printf("%-34s %8s %-34s %9.3f %-2s %9.3f %-2s %8.3f  [%6.3f, %6.3f]\n",
                  entry.metric.c_str(), entry.param.c_str(), entry.arm.c_str(), entry.stats.median,
                  entry.unit.c_str(), entry.stats.p99, entry.unit.c_str(), entry.ratio.median,
                  entry.ratio.low, entry.ratio.high);
    }
    for (const std::string& text : notes_) {
      std::printf("note: %s\n", text.c_str());
    }
    std::printf("(ratio: median of per-round ratios to the first arm of the same metric and "
                "param, with its 95%% interval)\n\n");
  }

  [[nodiscard]] std::string path(const char* extension) const {
    const char* out = std::getenv("OUT");
    return std::string(out != nullptr && *out != '\0' ? out : ".") + "/" + name_ + extension;
  }

  [[nodiscard]] bool write_csv() const {
    std::FILE* file = std::fopen(path(".csv").c_str(), "w");
    if (file == nullptr) {
      std::fprintf(stderr, "%s: cannot write %s\n", name_.c_str(), path(".csv").c_str());
      return false;
    }
    std::fprintf(file, "case,metric,param,arm,unit,median,p99,mean,min,samples,values\n");
    for (const row& entry : rows_) {
      // Text fields are quoted (RFC 4180): arm names may hold commas. The samples, in round
      // order, are one space-separated field (plot.py pairs them into per-round ratios).
      std::string values;
      char number[32];
      for (const double value : entry.values) {
        std::snprintf(number, sizeof number, "%s%.6g", values.empty() ? "" : " ", value);
        values += number;
      }
      std::fprintf(file, "%s,%s,%s,%s,%s,%.6g,%.6g,%.6g,%.6g,%zu,%s\n", csv_field(name_).c_str(),
                   csv_field(entry.metric).c_str(), csv_field(entry.param).c_str(),
                   csv_field(entry.arm).c_str(), csv_field(entry.unit).c_str(), entry.stats.median,
                   entry.stats.p99, entry.stats.mean, entry.stats.min, entry.stats.samples,
                   csv_field(values).c_str());
    }
    return std::fclose(file) == 0;
  }

  static std::string csv_field(const std::string& text) {
    std::string result = "\"";
    for (const char c : text) {
      if (c == '"') {
        result += '"'; // a quote inside a quoted field is doubled
      }
      result += c;
    }
    return result + "\"";
  }

  static std::string quoted(const std::string& text) {
    std::string result = "\"";
    for (const char c : text) {
      if (c == '"' || c == '\\') {
        result += '\\';
      }
      result += c;
    }
    return result + "\"";
  }

  [[nodiscard]] bool write_json() const {
    std::FILE* file = std::fopen(path(".json").c_str(), "w");
    if (file == nullptr) {
      std::fprintf(stderr, "%s: cannot write %s\n", name_.c_str(), path(".json").c_str());
      return false;
    }
    std::fprintf(file, "{\n  \"case\": %s,\n  \"title\": %s,\n  \"gpu\": %s,\n",
                 quoted(name_).c_str(), quoted(title_).c_str(), quoted(gpu_).c_str());
    std::fprintf(file,
                 "  \"driver_api_version\": %d,\n  \"runtime_version\": %d,\n  \"date\": %s,\n",
                 driver_, runtime_, quoted(date_).c_str());
    std::fprintf(file, "  \"notes\": [");
    for (std::size_t i = 0; i < notes_.size(); ++i) {
      std::fprintf(file, "%s%s", i == 0 ? "" : ", ", quoted(notes_[i]).c_str());
    }
    std::fprintf(file, "],\n  \"rows\": [\n");
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const row& entry = rows_[i];
      std::fprintf(
          file,
          "    {\"metric\": %s, \"param\": %s, \"arm\": %s, \"unit\": %s, \"median\": %.6g, "
          "\"p99\": %.6g, \"mean\": %.6g, \"min\": %.6g, \"samples\": %zu, \"ratio\": %.6g, "
          "\"ratio_low\": %.6g, \"ratio_high\": %.6g}%s\n",
          quoted(entry.metric).c_str(), quoted(entry.param).c_str(), quoted(entry.arm).c_str(),
          quoted(entry.unit).c_str(), entry.stats.median, entry.stats.p99, entry.stats.mean,
          entry.stats.min, entry.stats.samples, entry.ratio.median, entry.ratio.low,
          entry.ratio.high, i + 1 == rows_.size() ? "" : ",");
    }
    std::fprintf(file, "  ]\n}\n");
    return std::fclose(file) == 0;
  }

  std::string name_;
  std::string title_;
  std::string gpu_ = "unknown GPU";
  std::string date_;
  int driver_ = 0;
  int runtime_ = 0;
  std::vector<row> rows_;
  std::vector<std::string> notes_;
};

} // namespace bench
