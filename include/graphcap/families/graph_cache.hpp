// graphcap/families/graph_cache.hpp - one graph per key (a batch size, a shape), captured on first
// use.
//
//   graphcap::graph_cache<int> graphs{{.capacity = 8, .warmup_runs = 1}};
//   graphs.replay(batch_size, stream, [&](cudaStream_t s) { forward(s, batch_size); });
//
// What vLLM and SGLang do by hand for their decode steps: the first call for a key captures the
// work (after optional eager warm-up runs, e.g. to let libraries pick their algorithms), later
// calls replay the graph. The cache is bounded and evicts the least recently used graph.
//
// By default the graphs capture in thread_local mode (a server captures while its other threads
// keep launching work) and share one pool: every graph of the cache is replayed by its caller
// one at a time, never concurrently, so each graph's capture-time temporaries are free to be
// another's between replays, and an evicted graph's blocks go to the next capture (after its
// last replay: see docs/pools.md). A cache is not synchronized: use it from one thread at a time.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/mode.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/error.hpp>
#include <graphcap/families/shared_pool_graph.hpp>
#include <graphcap/pool/pool_handle.hpp>
#include <graphcap/pool/slab.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <functional>
#include <list>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace graphcap {

namespace detail {
template <class T>
struct is_basic_graph : std::false_type {};
template <class Mode, class Pool, class Annot, class Liveness>
struct is_basic_graph<basic_graph<Mode, Pool, Annot, Liveness>> : std::true_type {};
} // namespace detail

/// The 0.2 name of shared_pool_graph, the graph a graph_cache holds unless told otherwise.
using cached_graph [[deprecated("graphcap: cached_graph is spelled shared_pool_graph since 0.3")]] =
    shared_pool_graph;

/// How a graph_cache behaves.
struct graph_cache_options {
  std::size_t capacity = 16; ///< graphs kept; the least recently used one goes first
  int warmup_runs = 0;       ///< eager runs of the work before its capture (work takes a stream)
};

/// Counts, for monitoring and tests.
struct graph_cache_statistics {
  std::size_t hits = 0;      ///< replays of a graph already captured
  std::size_t misses = 0;    ///< captures
  std::size_t evictions = 0; ///< graphs dropped to stay within capacity
};

/// One graph per key (a batch size, a shape): replay(key, stream, work) captures `work` into a new
/// graph the first time a key is seen and replays the cached one after that; past its capacity
/// it evicts the graph used least recently. Its graphs share one pool: replay them one at a time.
template <class Key, class Graph = shared_pool_graph, class Hash = std::hash<Key>,
          class KeyEqual = std::equal_to<Key>>
class graph_cache {
  static_assert(detail::is_basic_graph<Graph>::value,
                "graphcap: graph_cache<Key, Graph> needs a graphcap::basic_graph (for example "
                "graphcap::graph or graphcap::graph_with<...>) as its Graph; for one "
                "piecewise_graph per key, use graph_family<Key, piecewise_graph<...>>");
  static_assert(std::is_invocable_r_v<std::size_t, const Hash&, const Key&>,
                "graphcap: graph_cache<Key> needs a hashable key: give it a Hash type");

  static constexpr bool shares_pool =
      std::constructible_from<Graph, const pool_handle&> &&
      (std::is_same_v<typename Graph::pool_type, pool::shared> ||
       requires { typename Graph::pool_type::handle_type; }); // pool::sleepable

public:
  using key_type = Key;     ///< what a graph is looked up by
  using graph_type = Graph; ///< the graphs it holds

  /// An empty cache; throws graphcap::error for a capacity of 0.
  explicit graph_cache(graph_cache_options options = {}) : options_(options) {
    if (options_.capacity == 0) {
      throw error("graphcap: a graph_cache needs a capacity of at least 1");
    }
    if constexpr (shares_pool) {
      pool_.emplace(detail::new_pool_handle_for<Graph>());
    }
  }

  /// The graph for `key`: captured now from `work` on `stream` if the cache has none (after
  /// options.warmup_runs eager runs of `work`), else the cached one, which becomes the most
  /// recently used. `work` is what basic_graph::capture() takes. A failed capture caches nothing.
  template <class Work>
  Graph& get(const Key& key, stream_ref stream, Work&& work) {
    if (const auto found = index_.find(key); found != index_.end()) {
      ++statistics_.hits;
      entries_.splice(entries_.begin(), entries_, found->second);
      return found->second->graph;
    }
    ++statistics_.misses;
    warm_up(stream, work);
    entry fresh{key, make_graph()};
    fresh.graph.capture(stream, std::forward<Work>(work));
    if (entries_.size() == options_.capacity) {
      evict_least_recent();
    }
    entries_.push_front(std::move(fresh));
    try {
      index_.emplace(key, entries_.begin());
    } catch (...) {
      entries_.pop_front();
      throw;
    }
    return entries_.front().graph;
  }

  /// get(key, stream, work) and replay it on `stream`.
  template <class Work>
  void replay(const Key& key, stream_ref stream, Work&& work) {
    get(key, stream, std::forward<Work>(work)).replay(stream);
  }

  /// The cached graph for `key`, or null; does not change the eviction order.
  [[nodiscard]] Graph* find(const Key& key) noexcept {
    const auto found = index_.find(key);
    return found == index_.end() ? nullptr : &found->second->graph;
  }
  /// Whether a graph for `key` is cached.
  [[nodiscard]] bool contains(const Key& key) const { return index_.contains(key); }

  /// Drops the graph for `key`; returns whether there was one.
  bool erase(const Key& key) {
    const auto found = index_.find(key);
    if (found == index_.end()) {
      return false;
    }
    entries_.erase(found->second);
    index_.erase(found);
    return true;
  }

  /// Drops every graph (their memory goes back to the pool, after their last replays).
  void clear() noexcept {
    index_.clear();
    entries_.clear();
  }

  /// Graphs cached now.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  /// Graphs it keeps at most.
  [[nodiscard]] std::size_t capacity() const noexcept { return options_.capacity; }
  /// Hits, misses and evictions so far.
  [[nodiscard]] const graph_cache_statistics& statistics() const noexcept { return statistics_; }

  /// The pool the cache's graphs share (pool::shared and pool::sleepable graphs only).
  template <bool Shares = shares_pool>
  [[nodiscard]] const pool_handle& pool() const noexcept {
    static_assert(Shares, "graphcap: pool() needs a graph_cache whose graphs use pool::shared or "
                          "pool::sleepable");
    return *pool_;
  }

private:
  struct entry {
    Key key;
    Graph graph;
  };

  Graph make_graph() {
    if constexpr (shares_pool) {
      return Graph{*pool_};
    } else {
      return Graph{};
    }
  }

  template <class Work>
  void warm_up(stream_ref stream, Work& work) {
    if (options_.warmup_runs <= 0) {
      return;
    }
    if constexpr (std::is_invocable_v<Work&, cudaStream_t>) {
      for (int run = 0; run < options_.warmup_runs; ++run) {
        std::invoke(work, stream.get());
      }
    } else {
      throw error("graphcap: graph_cache warm-up runs the work eagerly, so the work must take "
                  "the stream (cudaStream_t), not the capture scope; or set warmup_runs to 0");
    }
  }

  void evict_least_recent() {
    index_.erase(entries_.back().key);
    entries_.pop_back();
    ++statistics_.evictions;
  }

  graph_cache_options options_;
  std::optional<pool_handle> pool_; // the graphs' shared pool (pool::shared, pool::sleepable)
  std::list<entry> entries_;        // most recently used first
  std::unordered_map<Key, typename std::list<entry>::iterator, Hash, KeyEqual> index_;
  graph_cache_statistics statistics_{};
};

} // namespace graphcap
