// graphcap/families/graph_family.hpp - a shape family: one graph per batch size (a bucket),
// captured largest first into one pool on one stream, and a request padded up to the smallest
// bucket that fits.
//
//   graphcap::graph_family<> family;
//   family.capture_all({1, 2, 4, 8, 16}, stream, [&](std::size_t batch, cudaStream_t s) {
//     forward(s, batch);
//   });
//   const std::size_t bucket = family.replay_at_least(request, stream); // pad request to bucket
//
// What inference servers write by hand (vLLM, SGLang, TensorRT-LLM): every key's graph draws
// from the family's one shared pool and is captured on the family's one capture stream, largest
// key first, so that smaller keys' temporaries reuse the blocks the largest one freed; the pool
// then holds about what the largest key alone needs. The graphs must be replayed one at a time
// (the shared pool's rule, pool_handle.hpp). Lookup is a binary search over a sorted vector of
// keys. With family_options::one_executable, the family keeps every key's template and one
// executable graph per topology, switched from key to key by setting the nodes whose parameters
// differ (or cudaGraphExecUpdate from the template): no recapture, one executable per group.
// Its device memory, per key: ledger() (families/ledger.hpp); capture_all(keys,
// byte_budget{bytes}, ...) keeps the densest ladder that fits; release_executables() gives its
// executables up while it sleeps (families/detail/family_memory.hpp, the base that has them).
// docs/families.md has the details; a family is not synchronized: one thread at a time.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/mode.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/families/detail/executable_groups.hpp>
#include <graphcap/families/detail/family_memory.hpp>
#include <graphcap/families/detail/family_support.hpp>
#include <graphcap/families/detail/segment_groups.hpp>
#include <graphcap/families/detail/switch_verify.hpp>
#include <graphcap/families/ledger.hpp>
#include <graphcap/families/shared_pool_graph.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/pool/pool_handle.hpp>
#include <graphcap/pool/slab.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

/// The 0.2 name of shared_pool_graph, the graph a graph_family holds unless told otherwise.
using family_graph [[deprecated("graphcap: family_graph is spelled shared_pool_graph since 0.3")]] =
    shared_pool_graph;

/// One graph per key (a batch size), captured largest first into one pool; requests padded up
/// to the smallest captured key. See the header comment and docs/families.md. Its parameters
/// are ordered as graph_cache's: the key, then the graph.
template <class Key = std::size_t, class Graph = shared_pool_graph>
class graph_family : public detail::families::family_memory<Key, graph_family<Key, Graph>> {
  static_assert(
      requires { typename Graph::scope; } &&
          std::constructible_from<Graph, keep_graph_t, const pool_handle&>,
      "graphcap: graph_family<Key, Graph> needs a graphcap::basic_graph whose pool can be shared "
      "(pool::shared, or pool::private_pool given a handle), so that every key's graph draws "
      "from the family's one pool: use graphcap::shared_pool_graph or "
      "graph_with<pool::shared, ...>, not pool::off, pool::user or pool::graph_memory_nodes");
  static_assert(std::totally_ordered<Key>, "graphcap: graph_family<Key, Graph> needs keys "
                                           "ordered by < (batch sizes, lengths)");

public:
  using graph_type = Graph;                 ///< the graphs it holds
  using key_type = Key;                     ///< what a graph is looked up by
  using scope = typename Graph::scope;      ///< what a work taking the capture scope gets
  using options_type = family_options<Key>; ///< how it captures
  using detail::families::family_memory<Key, graph_family>::capture_all; // under a byte_budget

  /// An empty family with its own pool (made now) and capture stream (made at the first capture).
  /// \throws error for one_executable with a graph that cannot take another's executable (a
  /// piecewise graph's segments share per position); cuda_error if the pool cannot be made.
  explicit graph_family(options_type options = {}) : options_(std::move(options)) {
    if (!shares_executables && options_.one_executable) {
      detail::families::throw_no_switch_in_place();
    }
    detail::pool_handle_access::core(pool_)->reuse_larger_blocks(options_.reuse_larger_blocks);
  }

  /// Captures `work` for every key, largest first, into the family's pool on its capture stream,
  /// after the options' warm-up runs (eager, on `stream`); `work(key, scope&)` or `work(key,
  /// cudaStream_t)` is kept for captures on demand and switches. \throws family_key_error for no
  /// key or a duplicate, state_error if the family has keys, error for warm-up with a work taking
  /// the scope, and what a warm-up throws. \post every key is captured but the result's failures
  /// (a later lookup's error names the first; [[nodiscard]]) and not_captured (a budget reached
  /// stops it); on a throw none is.
  template <class Work>
  family_capture_result<Key> capture_all(std::vector<Key> keys, stream_ref stream, Work work) {
    if (!keys_.empty()) {
      throw state_error("graphcap: graph_family::capture_all() on a family that has keys "
                        "already: call clear() first, or make another family");
    }
    std::vector<Key> order = detail::families::largest_first(std::move(keys));
    work_.keep(std::move(work));
    if (options_.warmup_runs > 0 && !work_.eager) {
      throw error("graphcap: graph_family warm-up runs the work eagerly, so the work must take "
                  "(key, cudaStream_t), not the capture scope; or set warmup_runs to 0");
    }
    const family_clock::time_point start = now();
    if (options_.warmup == family_warmup::once) {
      work_.warm_up(order.front(), stream.get(), options_.warmup_runs);
    }
    family_capture_result<Key> result;
    for (std::size_t i = 0; i < order.size(); ++i) {
      result.stopped_by = budget_reached(start);
      if (result.stopped_by != family_stop::none) {
        result.not_captured.assign(order.begin() + static_cast<std::ptrdiff_t>(i), order.end());
        break;
      }
      const bool captured = try_capture(order[i], stream, result);
      report_progress(order[i], {i + 1, order.size(), now() - start, 0, 0, !captured});
    }
    result.elapsed = now() - start;
    capture_failures_ = detail::families::describe_failures(result.failures, order.size());
    return result;
  }

  /// The smallest captured key at least `n`; nullopt above the largest. A binary search.
  [[nodiscard]] std::optional<Key> find_at_least(const Key& n) const
      noexcept(detail::families::nothrow_keys<Key>) {
    const std::size_t index = index_at_least(n);
    return index == keys_.size() ? std::nullopt : std::optional<Key>{keys_[index]};
  }

  /// Replays the graph of the smallest captured key at least `n` on `stream` and returns that
  /// key, for the caller to pad its request to. Above the largest key: captures `n` itself with
  /// the kept work if options.capture_on_demand (what it throws propagates, nothing is added),
  /// else family_key_error. One-executable mode: a key takes its group's executable first if
  /// it does not hold it (its differing nodes set, or an update; last_update(), docs/families.md).
  /// A family of piecewise_graph<Segment, Context> hands `ctx` to the islands (one Context).
  /// \throws family_key_error as above; what a switch, the capture or the replay throws.
  template <class... Context>
  Key replay_at_least(const Key& n, stream_ref stream, Context&&... ctx) {
    std::size_t index = index_at_least(n);
    if (index == keys_.size()) [[unlikely]] {
      index = capture_on_demand(n, stream);
    }
    entry& found = *entries_[index];
    if (options_.one_executable) {
      switch_to(index, stream);
      current_ = keys_[index];
    }
    detail::families::replay_key(*found.graph, stream, std::forward<Context>(ctx)...);
    ++found.statistics.replays;
    return keys_[index];
  }

  /// The graph of exactly `key`, or null (one-executable mode: only while it holds its group's
  /// executable; the others hold a template alone).
  [[nodiscard]] Graph* find(const Key& key) noexcept(detail::families::nothrow_keys<Key>) {
    const std::size_t index = index_of(key);
    if (index == keys_.size()) {
      return nullptr;
    }
    Graph* const graph = entries_[index]->graph.get();
    if (options_.one_executable && !groups_.holds(*graph)) {
      return nullptr;
    }
    return graph;
  }

  /// Drops the graph of `key` (its memory goes back to the pool after its last replay; buffers
  /// it made stay valid); requests for it go to the next larger key. Returns whether it had one.
  bool evict(const Key& key) {
    const std::size_t index = index_of(key);
    if (index == keys_.size()) {
      return false;
    }
    if (current_ && *current_ == key) {
      current_.reset();
    }
    if (options_.one_executable) {
      groups_.leave(*entries_[index]->graph, entries_[index]->group);
    }
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
    keys_.erase(keys_.begin() + static_cast<std::ptrdiff_t>(index));
    return true;
  }

  /// Drops every graph and key (and the kept work): capture_all() may run again.
  void clear() noexcept {
    entries_.clear();
    keys_.clear();
    groups_.clear();
    current_.reset();
    work_ = {};
    capture_failures_.clear();
    this->forget();
  }

  /// The captured keys, smallest first.
  [[nodiscard]] const std::vector<Key>& keys() const noexcept { return keys_; }
  /// How many keys are captured.
  [[nodiscard]] std::size_t size() const noexcept { return keys_.size(); }
  /// The statistics of `key`, or null if it is not captured.
  [[nodiscard]] const family_key_statistics* statistics(const Key& key) const
      noexcept(detail::families::nothrow_keys<Key>) {
    const std::size_t index = index_of(key);
    return index == keys_.size() ? nullptr : &entries_[index]->statistics;
  }
  /// One-executable mode: the key captured or replayed last (nullopt: none, or it was evicted).
  [[nodiscard]] const std::optional<Key>& current_key() const noexcept { return current_; }
  /// One-executable mode: what the last switch or join did (updated, patched or instantiated).
  [[nodiscard]] const update_result& last_update() const noexcept { return last_update_; }
  /// Executable graphs: one per key (segment of a piecewise key), or per topology (one_executable).
  [[nodiscard]] std::size_t executables() const noexcept {
    return options_.one_executable ? groups_.executables()
                                   : detail::families::executables_of(entries_);
  }
  /// The pool every graph of the family draws from.
  [[nodiscard]] const pool_handle& pool() const noexcept { return pool_; }
  /// The stream every capture of the family runs on (null before the first capture).
  [[nodiscard]] cudaStream_t capture_stream() const noexcept { return stream_.get(); }
  /// The options it was made with.
  [[nodiscard]] const options_type& options() const noexcept { return options_; }

private:
  friend class detail::families::family_memory<Key, graph_family>;
  struct entry {
    std::unique_ptr<Graph> graph; // one_executable: the template, the executable while held
    family_key_statistics statistics;
    std::size_t group = 0; // one-executable mode: its group of one topology
  };
  family_clock::time_point now() const {
    return options_.clock ? options_.clock() : family_clock::now();
  }

  family_stop budget_reached(family_clock::time_point start) const {
    return detail::families::budget_reached(options_, now() - start,
                                            pool_.statistics().reserved_bytes);
  }

  /// Captures `key` (after its warm-up, per key) and enters it; a throw is recorded instead.
  bool try_capture(const Key& key, stream_ref stream, family_capture_result<Key>& result) {
    try {
      if (options_.warmup == family_warmup::per_key) {
        work_.warm_up(key, stream.get(), options_.warmup_runs);
      }
      std::unique_ptr<entry> fresh = capture_entry(key);
      if (!fresh) { // a byte budget left it out
        result.not_captured.push_back(key);
        result.left_out.push_back(this->left_out().back());
        return false;
      }
      insert(key, std::move(fresh));
      result.captured.push_back(key);
      return true;
    } catch (...) {
      const std::exception_ptr failure = std::current_exception();
      result.failures.push_back({key, detail::families::failure_message(failure), failure});
      return false;
    }
  }

  /// `key`'s graph, timed: its capture, then its instantiation or (one_executable) group join.
  std::unique_ptr<entry> capture_entry(const Key& key) {
    keys_.reserve(keys_.size() + 1); // insert() then cannot drop a graph that joined a group
    entries_.reserve(entries_.size() + 1);
    auto fresh = std::make_unique<entry>();
    fresh->graph = std::make_unique<Graph>(keep_graph, pool_);
    Graph& graph = *fresh->graph;
    family_key_statistics& counts = fresh->statistics;
    auto& core = *detail::pool_handle_access::core(pool_);
    this->before_capture(core);
    const pool_statistics before = core.statistics();
    const family_clock::time_point begin = now();
    graph.capture(this->measured_stream(stream_), [&](scope& cap) { work_.capture(key, cap); });
    const family_clock::time_point captured = now();
    counts.capture_time = captured - begin;
    counts.nodes = graph.node_count();
    this->note_capture(graph, counts, before, core);
    if (options_.one_executable) {
      if constexpr (shares_executables) { // else refused by the constructor
        join(graph).record(counts, fresh->group, last_update_);
        current_ = key;
      }
    } else if (!this->admit(key, graph, counts, core, entries_.empty())) {
      return nullptr; // a byte budget left it out
    }
    counts.instantiate_time = now() - captured;
    return fresh;
  }

  static constexpr bool shares_executables =
      detail::families::shares_executables<Graph> || detail::families::segmented_graph<Graph>;

  /// One-executable mode: `graph` (captured, keeping its template) joins its group; a
  /// segmented graph's segments join their positions' groups (the piecewise graph befriends
  /// the family for its segments).
  detail::families::group_switch join(Graph& graph) {
    if constexpr (detail::families::segmented_graph<Graph>) {
      return groups_.join(graph, graph.segments_);
    } else {
      return groups_.join(graph);
    }
  }

  /// One-executable mode: key `index`'s graph takes its group's executable, unless it holds it.
  void switch_to([[maybe_unused]] std::size_t index, [[maybe_unused]] stream_ref stream) {
    if constexpr (shares_executables) { // else refused by the constructor
      detail::families::switch_and_check(groups_, *entries_[index], keys_[index], options_,
                                         work_.eager, stream.get(), last_update_);
    }
  }

  std::size_t capture_on_demand(const Key& n, stream_ref stream) {
    if (!options_.capture_on_demand || !work_.capture) {
      throw family_key_error(detail::families::no_key_at_least(
          detail::families::key_text(n),
          keys_.empty() ? std::string{} : detail::families::key_text(keys_.back()),
          capture_failures_));
    }
    if (options_.warmup == family_warmup::per_key && work_.eager) {
      work_.warm_up(n, stream.get(), options_.warmup_runs);
    }
    return insert(n, capture_entry(n));
  }

  /// Enters `key` in the sorted vectors (room made by capture_entry); returns its index.
  std::size_t insert(const Key& key, std::unique_ptr<entry> fresh) {
    const std::size_t index = index_at_least(key);
    keys_.insert(keys_.begin() + static_cast<std::ptrdiff_t>(index), key);
    entries_.insert(entries_.begin() + static_cast<std::ptrdiff_t>(index), std::move(fresh));
    return index;
  }

  std::size_t index_at_least(const Key& n) const noexcept(detail::families::nothrow_keys<Key>) {
    return detail::families::lower_bound_index(keys_.data(), keys_.size(), n);
  }
  std::size_t index_of(const Key& key) const noexcept(detail::families::nothrow_keys<Key>) {
    const std::size_t index = index_at_least(key);
    return index < keys_.size() && !(key < keys_[index]) ? index : keys_.size();
  }

  void report_progress(const Key& key, family_progress progress) const {
    progress.pool_bytes = pool_.statistics().reserved_bytes;
    detail::families::report_progress(options_, key, statistics(key), progress);
  }

  options_type options_;
  detail::stream_handle stream_; // the capture stream; destroyed after every graph
  pool_handle pool_ = detail::new_pool_handle_for<Graph>();
  std::vector<Key> keys_;                       // smallest first, for the binary search
  std::vector<std::unique_ptr<entry>> entries_; // in the order of keys_
  detail::families::groups_for<Graph> groups_;  // one-executable mode
  std::optional<Key> current_;                  // the key replayed last
  std::string capture_failures_;                // what capture_all() could not capture, and why
  update_result last_update_{};
  detail::families::family_work<Key, scope> work_; // what capture_all() was given
};

/// The 0.2 name and parameter order of graph_family (the graph first), for one release.
template <class Graph = shared_pool_graph, class Key = std::size_t>
using shape_family [[deprecated("graphcap: shape_family<Graph, Key> is spelled graph_family<Key, "
                                "Graph> since 0.3 (the key first, as in graph_cache)")]] =
    graph_family<Key, Graph>;

} // namespace graphcap
