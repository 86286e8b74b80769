// graphcap/families/detail/family_support.hpp - how graph_family (families/graph_family.hpp)
// checks its keys, counts its statistics and words its errors and progress lines.
#pragma once

#include <graphcap/families/family_types.hpp>

#include <graphcap/core/update.hpp>

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <concepts>
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

namespace detail::families {

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
template <class = void>
std::string failure_message(const std::exception_ptr& failure) {
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
    throw family_key_error("graphcap: graph_family::capture_all() was given no key: pass the "
                           "shapes (batch sizes) to capture");
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) { return b < a; });
  for (std::size_t i = 1; i < keys.size(); ++i) {
    if (!(keys[i] < keys[i - 1])) {
      throw family_key_error("graphcap: graph_family::capture_all() was given the key " +
                             key_text(keys[i]) + " twice: pass each shape once");
    }
  }
  return keys;
}

/// Which budget of `options` a capture_all() `elapsed` into it, with `reserved` bytes in the
/// pool, has reached (family_stop::none: neither).
template <class Options>
family_stop budget_reached(const Options& options, std::chrono::nanoseconds elapsed,
                           std::size_t reserved) {
  if (options.time_budget && elapsed >= *options.time_budget) {
    return family_stop::time_budget;
  }
  if (options.memory_budget && reserved >= *options.memory_budget) {
    return family_stop::memory_budget;
  }
  return family_stop::none;
}

/// Whether one `Graph` can take another's executable graph (basic_graph::take_executable), as
/// one-executable mode needs; a piecewise graph has one executable per segment, and shares them
/// segment by segment instead (families/detail/segment_groups.hpp).
template <class Graph>
concept shares_executables = requires(Graph& graph) {
  { graph.take_executable(graph) } -> std::same_as<update_result>;
};

/// graph.replay(stream[, ctx]) for a family's replay_at_least: a context only for graphs whose
/// islands take one (piecewise_graph<Graph, Context>), refused at compile time for the others.
template <class Graph, class Stream, class... Context>
void replay_key(Graph& graph, Stream stream, Context&&... ctx) {
  constexpr bool allowed = sizeof...(Context) == 0 || requires {
    typename Graph::context_type;
  };
  static_assert(allowed,
                "graphcap: replay_at_least(n, stream, ctx) hands ctx to the islands of "
                "a family of piecewise_graph<Graph, Context>; this family's graphs take no "
                "context: call replay_at_least(n, stream)");
  if constexpr (allowed) { // the assertion's error alone
    graph.replay(stream, std::forward<Context>(ctx)...);
  }
}

/// The error of one_executable mode with a graph that cannot share an executable.
template <class = void>
[[noreturn]] void throw_no_switch_in_place() {
  throw error("graphcap: graph_family one_executable mode hands one executable graph from key "
              "to key (basic_graph::take_executable), which this Graph does not offer (a "
              "basic_graph does, and a piecewise_graph of basic_graphs, segment by segment): use "
              "the default mode, one graph per key");
}

/// The report's line of milliseconds.
template <class = void>
std::string milliseconds(std::chrono::nanoseconds time) {
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
    } else if constexpr (std::is_invocable_v<Work&, const Key&, cudaStream_t>) {
      capture = [work](const Key& key, Scope& cap) mutable { work(key, cap.stream()); };
      eager = std::move(work);
    } else { // one error: nothing after it for the compiler to report again
      static_assert(std::is_invocable_v<Work&, const Key&, cudaStream_t>,
                    "graphcap: graph_family::capture_all(keys, stream, work) needs a work "
                    "callable as work(key, scope&) or work(key, cudaStream_t)");
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
template <class = void>
cudaStream_t ensure_stream(stream_handle& stream) {
  if (!stream) {
    cudaStream_t created = nullptr;
    check(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    stream.reset(created);
  }
  return stream.get();
}

/// The message of a request above the largest key (`largest` empty: the family has none);
/// `failures`: what capture_all() said of the keys it could not capture, if any.
template <class = void>
std::string no_key_at_least(const std::string& n, const std::string& largest,
                            const std::string& failures) {
  std::string message =
      "graphcap: graph_family has no key at least " + n +
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
template <class = void>
void print_progress_line(const std::string& key, const family_progress& progress) {
  std::fprintf(stderr,
               "graphcap: graph_family: key %s %s (%zu of %zu), %.1f s, %zu nodes, pool %.1f MiB\n",
               key.c_str(), progress.failed ? "failed" : "captured", progress.index, progress.count,
               std::chrono::duration<double>(progress.elapsed).count(), progress.nodes,
               static_cast<double>(progress.pool_bytes) / (1024.0 * 1024.0));
}

/// Hands `progress` of `key` (its counts, null if it was not captured) to the options' callback
/// and, past a second, to a line on stderr.
template <class Key>
void report_progress(const family_options<Key>& options, const Key& key,
                     const family_key_statistics* counts, family_progress progress) {
  if (counts != nullptr) {
    progress.nodes = counts->nodes;
  }
  if (options.on_progress) {
    options.on_progress(key, progress);
  }
  if (options.progress_line && progress.elapsed > std::chrono::seconds(1)) {
    print_progress_line(key_text(key), progress);
  }
}

/// The family's report: a header line, then one row per key (`at(i)`: the i-th key's counts).
template <class Key, class Statistics>
void write_family_report(std::ostream& out, const std::vector<Key>& keys, bool one_executable,
                         std::size_t reserved_bytes, std::size_t executables,
                         std::size_t executable_bytes, Statistics at) {
  out << "graph_family: " << keys.size() << " keys, "
      << (one_executable ? "one executable graph per topology" : "one graph per key") << ", "
      << executables << " executable graphs (" << executable_bytes
      << " device bytes measured at instantiation), pool " << reserved_bytes << " bytes reserved\n"
      << std::setw(10) << "key" << std::setw(12) << "capture ms" << std::setw(16)
      << "instantiate ms" << std::setw(8) << "nodes" << std::setw(12) << "pool bytes"
      << std::setw(10) << "replays";
  if (one_executable) {
    out << std::setw(10) << "switches" << std::setw(9) << "updated" << std::setw(9) << "patched"
        << std::setw(11) << "fallbacks";
  }
  out << '\n';
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const family_key_statistics& counts = at(i);
    out << std::setw(10) << key_text(keys[i]) << std::setw(12) << milliseconds(counts.capture_time)
        << std::setw(16) << milliseconds(counts.instantiate_time) << std::setw(8) << counts.nodes
        << std::setw(12) << counts.pool_bytes << std::setw(10) << counts.replays;
    if (one_executable) {
      out << std::setw(10) << counts.switches << std::setw(9) << counts.updates << std::setw(9)
          << counts.patches << std::setw(11) << counts.fallbacks;
    }
    out << '\n';
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!at(i).own_executable.empty()) {
      out << "key " << key_text(keys[i])
          << ": an executable graph of its own: " << at(i).own_executable << '\n';
    }
  }
}

} // namespace detail::families
} // namespace graphcap
