// graphcap/detail/family_types.hpp - what graphcap::shape_family (graphcap/family.hpp) takes and
// reports: its options, the progress of capture_all(), its result, and per-key statistics.
#pragma once

#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/detail/unique_handle.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

/// A bad key or key set for a shape_family: an empty set, a key given twice, a request above the
/// largest captured key (with no capture on demand). The message names the key.
class family_key_error : public error {
public:
  using error::error;
};

/// When capture_all() runs the work eagerly before capturing (family_options::warmup_runs).
enum class family_warmup : std::uint8_t {
  once,    ///< warmup_runs runs of the largest key, before the first capture
  per_key, ///< warmup_runs runs of each key, before its capture
};

/// Why capture_all() stopped before capturing every key.
enum class family_stop : std::uint8_t {
  none,          ///< it did not stop: every key was tried
  time_budget,   ///< family_options::time_budget was reached
  memory_budget, ///< the pool reached family_options::memory_budget bytes
};

/// The clock of a shape_family: steady_clock's time points, from a function tests may replace.
using family_clock = std::chrono::steady_clock;

/// One step of capture_all(), for its progress callback.
struct family_progress {
  std::size_t index = 0;              ///< this key is the index-th captured (1-based)
  std::size_t count = 0;              ///< of this many keys
  std::chrono::nanoseconds elapsed{}; ///< since capture_all() began
  std::size_t nodes = 0;              ///< the key's graph's nodes (0 if its capture failed)
  std::size_t pool_bytes = 0;         ///< the family's pool, reserved bytes, now
  bool failed = false;                ///< the key's capture threw (see the result's failures)
};

/// How a shape_family captures and looks up its graphs.
template <class Key>
struct family_options {
  int warmup_runs = 0;                        ///< eager runs of the work (it takes a stream)
  family_warmup warmup = family_warmup::once; ///< of the largest key only, or of every key
  std::optional<std::chrono::nanoseconds> time_budget{}; ///< stop capture_all() past this time
  std::optional<std::size_t> memory_budget{}; ///< stop once the pool reserves this many bytes
  /// Called after each key's capture (or failure) with its key and where capture_all() stands.
  std::function<void(const Key&, const family_progress&)> on_progress{};
  bool progress_line = true;      ///< a line on stderr per key once capture_all() takes over 1 s
  bool capture_on_demand = false; ///< replay_at_least() above the largest key captures it
  /// One executable graph for every key: switching keys recaptures and updates it in place.
  bool one_executable = false;
  /// Smaller keys' temporaries reuse the blocks larger keys freed (pool_core::reuse_larger_blocks)
  bool reuse_larger_blocks = true;
  std::function<family_clock::time_point()> clock{}; ///< null: family_clock::now (tests replace it)
};

/// A key whose capture threw during capture_all(): the others stay usable.
template <class Key>
struct family_failure {
  Key key;                  ///< the key
  std::string message;      ///< what() of the exception, or a placeholder
  std::exception_ptr error; ///< the exception itself, to rethrow
};

/// What capture_all() did: the keys captured, those it did not reach, and those that failed.
/// Not to be dropped: a capture_all() whose keys all failed returns normally (see failures).
template <class Key>
struct [[nodiscard]] family_capture_result {
  std::vector<Key> captured;                  ///< in capture order: largest first
  std::vector<Key> not_captured;              ///< keys a budget kept from being tried
  std::vector<family_failure<Key>> failures;  ///< keys whose capture threw
  family_stop stopped_by = family_stop::none; ///< which budget stopped it, if one did
  std::chrono::nanoseconds elapsed{};         ///< the whole capture_all()

  /// True when every key was captured.
  [[nodiscard]] bool complete() const noexcept { return not_captured.empty() && failures.empty(); }
  /// Rethrows the first failure's exception, if any.
  void rethrow_first_failure() const {
    if (!failures.empty()) {
      std::rethrow_exception(failures.front().error);
    }
  }
};

/// What a shape_family knows of one key.
struct family_key_statistics {
  std::chrono::nanoseconds capture_time{};     ///< capture (one executable: last switch's)
  std::chrono::nanoseconds instantiate_time{}; ///< instantiation (0 in one-executable mode)
  std::size_t nodes = 0;                       ///< nodes of its graph
  std::size_t pool_bytes = 0;                  ///< what the pool grew by for its capture
  std::size_t replays = 0;                     ///< replays through the family
  std::size_t switches = 0;  ///< one executable: recaptures that switched to this key
  std::size_t updates = 0;   ///< of those, updated in place
  std::size_t fallbacks = 0; ///< of those, instantiated anew (refused update or empty graph)
};

namespace detail {

/// Whether copying and comparing keys cannot throw (so neither can a family's lookups).
template <class Key>
inline constexpr bool nothrow_keys = std::is_nothrow_copy_constructible_v<Key>&& noexcept(
    static_cast<bool>(std::declval<const Key&>() < std::declval<const Key&>()));

/// The index of the first of `keys` (sorted, smallest first) not less than `n`, or `count`.
/// For arithmetic keys a binary search without branches on the comparisons (the halving is a
/// conditional move): requests of random sizes make std::lower_bound mispredict about half its
/// steps, and a lookup sits on an inference server's hot path. Other keys: std::lower_bound.
template <class Key>
[[nodiscard]] std::size_t lower_bound_index(const Key* keys, std::size_t count,
                                            const Key& n) noexcept(nothrow_keys<Key>) {
  if constexpr (std::is_arithmetic_v<Key>) {
    if (count == 0) {
      return 0;
    }
    const Key* base = keys;
    std::size_t length = count;
    while (length > 1) { // invariant: the answer is in [base, base + length]
      const std::size_t half = length / 2;
      base = base[half] < n ? base + half : base;
      length -= half;
    }
    return static_cast<std::size_t>(base - keys) + (*base < n ? 1 : 0);
  } else {
    return static_cast<std::size_t>(std::lower_bound(keys, keys + count, n) - keys);
  }
}

/// `key` as text, for messages and the report: operator<< if it has one.
template <class Key>
std::string key_text(const Key& key) {
  if constexpr (requires(std::ostream & out) { out << key; }) {
    std::ostringstream out;
    out << key;
    return out.str();
  } else {
    return "(a key with no operator<<)";
  }
}

/// The message of a failure: what() for a std::exception.
inline std::string failure_message(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& thrown) {
    return thrown.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

/// Validates a key set: throws family_key_error for an empty set or a duplicate (naming it), and
/// returns the keys largest first.
template <class Key>
std::vector<Key> largest_first(std::vector<Key> keys) {
  if (keys.empty()) {
    throw family_key_error("graphcap: shape_family::capture_all() was given no key: pass the "
                           "shapes (batch sizes) to capture");
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) { return b < a; });
  for (std::size_t i = 1; i < keys.size(); ++i) {
    if (!(keys[i] < keys[i - 1])) {
      throw family_key_error("graphcap: shape_family::capture_all() was given the key " +
                             key_text(keys[i]) + " twice: pass each shape once");
    }
  }
  return keys;
}

/// The report's line of milliseconds.
inline std::string milliseconds(std::chrono::nanoseconds time) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << std::chrono::duration<double, std::milli>(time).count();
  return out.str();
}

/// The work of a family, kept for captures on demand and switches: `capture` takes the scope,
/// `eager` (null for a work that takes the scope) the stream, for warm-up runs.
template <class Key, class Scope>
struct family_work {
  std::function<void(const Key&, Scope&)> capture;     ///< what a capture runs
  std::function<void(const Key&, cudaStream_t)> eager; ///< what a warm-up runs

  /// Keeps `work`, called as work(key, scope&) or work(key, cudaStream_t).
  template <class Work>
  void keep(Work work) {
    if constexpr (std::is_invocable_v<Work&, const Key&, Scope&>) {
      capture = std::move(work);
      eager = nullptr;
    } else {
      static_assert(std::is_invocable_v<Work&, const Key&, cudaStream_t>,
                    "graphcap: shape_family::capture_all(keys, stream, work) needs a work "
                    "callable as work(key, scope&) or work(key, cudaStream_t)");
      capture = [work](const Key& key, Scope& cap) mutable { work(key, cap.stream()); };
      eager = std::move(work);
    }
  }

  /// `runs` eager runs of the work for `key` on `stream`.
  void warm_up(const Key& key, cudaStream_t stream, int runs) {
    for (int run = 0; run < runs; ++run) {
      eager(key, stream);
    }
  }
};

/// The stream `stream` holds, made (non-blocking, on the current device) if it holds none.
inline cudaStream_t ensure_stream(stream_handle& stream) {
  if (!stream) {
    cudaStream_t created = nullptr;
    check(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    stream.reset(created);
  }
  return stream.get();
}

/// The message of a request above the largest key (`largest` empty: the family has none);
/// `failures`: what capture_all() said of the keys it could not capture, if any.
inline std::string no_key_at_least(const std::string& n, const std::string& largest,
                                   const std::string& failures) {
  std::string message =
      "graphcap: shape_family has no key at least " + n +
      (largest.empty() ? std::string{" (it has no key)"} : " (the largest is " + largest + ")");
  if (!failures.empty()) {
    return message + "; " + failures;
  }
  return message + ": capture a larger key, or set family_options::capture_on_demand";
}

/// What a later lookup says of capture_all()'s failures: how many keys failed, and the first
/// one's error (the cause a "no key" error would otherwise hide).
template <class Key>
std::string describe_failures(const std::vector<family_failure<Key>>& failures, std::size_t tried) {
  if (failures.empty()) {
    return {};
  }
  return "capture_all() failed for " + std::to_string(failures.size()) + " of " +
         std::to_string(tried) + " key(s), the first (" + key_text(failures.front().key) +
         ") with: " + failures.front().message;
}

/// capture_all()'s line on stderr for one key.
inline void print_progress_line(const std::string& key, const family_progress& progress) {
  std::fprintf(stderr,
               "graphcap: shape_family: key %s %s (%zu of %zu), %.1f s, %zu nodes, pool %.1f MiB\n",
               key.c_str(), progress.failed ? "failed" : "captured", progress.index, progress.count,
               std::chrono::duration<double>(progress.elapsed).count(), progress.nodes,
               static_cast<double>(progress.pool_bytes) / (1024.0 * 1024.0));
}

/// The family's report: a header line, then one row per key (`at(i)`: the i-th key's counts).
template <class Key, class Statistics>
void write_family_report(std::ostream& out, const std::vector<Key>& keys, bool one_executable,
                         std::size_t reserved_bytes, Statistics at) {
  out << "shape_family: " << keys.size() << " keys, "
      << (one_executable ? "one executable graph" : "one graph per key") << ", pool "
      << reserved_bytes << " bytes reserved\n"
      << std::setw(10) << "key" << std::setw(12) << "capture ms" << std::setw(16)
      << "instantiate ms" << std::setw(8) << "nodes" << std::setw(12) << "pool bytes"
      << std::setw(10) << "replays";
  if (one_executable) {
    out << std::setw(10) << "switches" << std::setw(9) << "updated" << std::setw(11) << "fallbacks";
  }
  out << '\n';
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const family_key_statistics& counts = at(i);
    out << std::setw(10) << key_text(keys[i]) << std::setw(12) << milliseconds(counts.capture_time)
        << std::setw(16) << milliseconds(counts.instantiate_time) << std::setw(8) << counts.nodes
        << std::setw(12) << counts.pool_bytes << std::setw(10) << counts.replays;
    if (one_executable) {
      out << std::setw(10) << counts.switches << std::setw(9) << counts.updates << std::setw(11)
          << counts.fallbacks;
    }
    out << '\n';
  }
}

} // namespace detail
} // namespace graphcap
