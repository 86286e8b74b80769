// graphcap/piecewise/piecewise_graph.hpp - a step captured as graph segments with eager islands
// between them, replayed as one graph object (docs/piecewise.md).
//
//   graphcap::piecewise_graph<> step;
//   step.capture(stream, [&](auto& cap) {
//     embed<<<blocks, threads, 0, cap.stream()>>>(tokens, x);           // segment 0
//     cap.eager([&](cudaStream_t s) {                                    // island 0: every replay
//       attention<<<grid_for(host_length), threads, 0, s>>>(x);          // (a host-valued grid)
//     });
//     mlp<<<blocks, threads, 0, cap.stream()>>>(x);                      // segment 1
//   });
//   step.replay(stream);  // segment 0, island 0 (run now, on `stream`), segment 1
//
// What a graph cannot hold (a launch whose grid is a host value that changes every step, a
// library call that synchronizes or allocates, a host-staged collective) runs as an island: the
// capture ends the current segment at cap.eager(island), records the island, and resumes into
// the next segment on the same stream. Every segment is a `Graph`; they draw from one pool (the
// first segment's, shared by handle with the others), so a block allocated in one segment and
// read in a later one keeps its address: that is how data crosses a break. With no island the
// graph is one segment and replay() is that segment's replay. Not synchronized: one thread at a
// time, as for any graph.
//
// piecewise_graph<Graph, Context> hands its islands a per-replay value: an island captured as
// cap.eager([](cudaStream_t s, Context& ctx) {...}) gets the object of replay(stream, ctx). Its
// segments are rebound by graphcap::rebinder (<graphcap/rebind/piecewise_rebinder.hpp>).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/scope.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/error.hpp>
#include <graphcap/piecewise/detail/islands.hpp>
#include <graphcap/piecewise/detail/step_liveness.hpp>
#include <graphcap/piecewise/embed.hpp>
#include <graphcap/piecewise/island_error.hpp>
#include <graphcap/piecewise/piecewise_scope.hpp>
#include <graphcap/pool/default_graph.hpp>
#include <graphcap/pool/pool_handle.hpp>
#include <graphcap/pool/pool_statistics.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

template <class Graph>
class rebinder;
template <class Key, class Graph>
class graph_family;

/// A step captured as segments of `Graph` with eager islands between them, replayed as one
/// object: segment 0, island 0, segment 1, ... on one stream. In the capture, cap.eager(island)
/// ends the current segment, records the island (work a graph cannot hold: a launch whose grid
/// is a host value that changes every step, a library call that synchronizes or allocates) and
/// resumes into the next segment; every replay runs the island again, eagerly. The segments draw
/// from one pool (the first segment's, shared by handle), so a block allocated in one segment
/// keeps its address in the next. With no island, it is one segment. `Context` (void: none) is
/// a value replay(stream, ctx) hands every island that takes it. One thread at a time.
/// docs/piecewise.md.
template <class Graph = graphcap::graph, class Context = void>
class piecewise_graph : detail::core_extension {
  static_assert(
      requires {
        typename Graph::scope;
        typename Graph::pool_type;
      },
      "graphcap: piecewise_graph<Graph> needs a graphcap::basic_graph as its segment type");
  static_assert(
      !Graph::pool_type::can_allocate || std::constructible_from<Graph, const pool_handle&>,
      "graphcap: piecewise_graph<Graph> draws every segment from one pool, shared by handle: "
      "use a graph whose pool can be shared (pool::private_pool, the default, or pool::shared) "
      "or pool::off; pool::user and pool::graph_memory_nodes cannot be shared across segments");

public:
  using segment_type = Graph;   ///< the graph of one segment
  using context_type = Context; ///< what replay(stream, ctx) hands the islands
  using scope = piecewise_scope<Graph, typename Graph::scope, Context>; ///< capture(work)'s
  /// What recapture(work) hands `work`.
  using recapture_scope = piecewise_scope<Graph, typename Graph::recapture_scope, Context>;
  /// What runs between two segments: void(cudaStream_t), or void(cudaStream_t, Context&).
  using island_type = typename detail::piecewise::island_slot<Context>::type;

  /// An empty piecewise graph. Makes no CUDA call: the first capture does.
  piecewise_graph() = default;
  /// An empty piecewise graph whose segments keep their templates (keep_graph): for write_dot(),
  /// rebinders, families; segments are instantiated at their first replay, or by instantiate().
  explicit piecewise_graph(keep_graph_t /*keep*/) noexcept : keep_graph_(true) {}
  /// An empty piecewise graph whose segments all draw from the pool behind `pool` (another
  /// graph's pool(), a family's): what a graph_family of piecewise graphs makes per key.
  explicit piecewise_graph(
      const pool_handle& pool) requires std::constructible_from<Graph, const pool_handle&>
      : shared_pool_(pool), given_pool_(pool) {}
  /// The same, keeping the segments' templates (keep_graph).
  piecewise_graph(keep_graph_t /*keep*/, const pool_handle& pool) requires
      std::constructible_from<Graph, const pool_handle&>
      : shared_pool_(pool), given_pool_(pool), keep_graph_(true) {}
  /// Takes `other`'s capture; `other` is left empty.
  piecewise_graph(piecewise_graph&&) noexcept = default;
  /// Drops this graph's capture, then takes `other`'s.
  piecewise_graph& operator=(piecewise_graph&&) noexcept = default;
  piecewise_graph(const piecewise_graph&) = delete;
  piecewise_graph& operator=(const piecewise_graph&) = delete;
  ~piecewise_graph() = default;

  /// Captures what `work` issues on `stream`; `work` takes the scope, the stream, or nothing,
  /// and may call cap.eager(island) any number of times. Returns what `work` returns.
  /// \throws state_error if the graph holds a capture (reset() first); what `work` or a segment
  /// throws. \post on a throw every segment is dropped: empty, nothing left capturing.
  template <class Work>
  decltype(auto) capture(stream_ref stream, Work&& work) {
    if (!empty()) {
      throw state_error("graphcap: capture() on a piecewise graph that holds a capture: call "
                        "reset() first");
    }
    ++generation_;
    try {
      scope cap{*this, stream.get()};
      cap.current_.emplace(begin_segment<typename Graph::scope>(stream.get(), 0));
      if constexpr (std::is_void_v<decltype(detail::invoke_work(cap, work))>) {
        detail::invoke_work(cap, std::forward<Work>(work));
        cap.end_segment("the end of the capture");
      } else {
        decltype(auto) result = detail::invoke_work(cap, std::forward<Work>(work));
        cap.end_segment("the end of the capture");
        return result;
      }
    } catch (...) {
      reset();
      throw;
    }
  }

  /// Captures `work` again; segment k's executable is updated in place where CUDA allows it and
  /// instantiated anew otherwise (basic_graph::recapture()); the islands are the new ones.
  /// Returns one update_result per segment. More breaks than before: the extra segments are
  /// captured fresh; fewer: the rest are dropped. Each segment gets its previous blocks in order.
  /// \throws a refusal before it begins (segment 0's stream, a sleeping pool, a policy), what
  /// `work` or a segment throws. \post after a refusal unchanged; after a later throw empty.
  template <class Work>
  std::vector<update_result> recapture(stream_ref stream, Work&& work) {
    bool begun = false;
    ++generation_; // a refused recapture changes nothing but this: a rebinder rescans
    try {
      recapture_scope cap{*this, stream.get()};
      cap.current_.emplace(begin_segment<typename Graph::recapture_scope>(stream.get(), 0));
      begun = true;
      islands_.clear();
      island_scopes_.clear();
      detail::invoke_work(cap, std::forward<Work>(work));
      cap.end_segment("the end of the capture");
      segments_.resize(islands_.size() + 1); // fewer breaks than before: the rest is dropped
      return std::move(cap.updates_);
    } catch (...) {
      if (begun || segments_.empty() || segments_.front()->empty()) { // else refused: kept
        reset();
      }
      throw;
    }
  }

  /// Replays segment 0, runs island 0 eagerly on `stream`, replays segment 1, and so on. With
  /// liveness::check every segment's inputs (an empty segment's too) are checked once per step,
  /// before anything is launched (an allocation read by several segments asked about once); the
  /// launches do not check again. A graph with a Context is replayed with replay(stream, ctx).
  /// \throws state_error before a capture, liveness_error, cuda_error; island_error if an island
  /// threw (nested): the replay stops, still replayable.
  void replay(stream_ref stream = {}) {
    static_assert(std::is_void_v<Context>,
                  "graphcap: this piecewise_graph<Graph, Context> hands its islands a Context: "
                  "replay it with replay(stream, ctx)");
    replay_steps(stream.get());
  }
  /// replay(stream), handing `ctx` to every island that takes the context (each island gets the
  /// same object, in order). Needs a piecewise_graph<Graph, Context> and a Context lvalue or
  /// rvalue: another type does not compile. \throws as replay(stream).
  template <class Given>
  void replay(stream_ref stream, Given&& ctx) {
    static_assert(!std::is_void_v<Context>,
                  "graphcap: replay(stream, ctx) needs a piecewise_graph<Graph, Context>: this "
                  "graph's islands take no context (declare the graph with its Context type)");
    static_assert(std::is_same_v<std::remove_reference_t<Given>, Context>,
                  "graphcap: replay(stream, ctx) of a piecewise_graph<Graph, Context> takes a "
                  "non-const Context; the context given is of another type");
    replay_steps(stream.get(), ctx);
  }

  /// Instantiates every segment captured and not yet instantiated (keep_graph: a replay does it
  /// on its own; this moves the cost ahead). \throws state_error before a capture; cuda_error.
  void instantiate() {
    if (empty()) {
      throw state_error("graphcap: instantiate() of a piecewise graph that holds no capture: "
                        "capture() first");
    }
    for (const std::unique_ptr<Graph>& segment : segments_) {
      if (segment->state() == graph_state::captured) {
        segment->instantiate();
      }
    }
  }

  /// Destroys every segment's executable and keeps the templates (keep_graph), as
  /// basic_graph::release_executable(): the next replay or instantiate() makes them again. What
  /// a graph_family's release_executables() calls for a sleep.
  /// \throws state_error without keep_graph (nothing released). \post every segment captured.
  void release_executable() {
    for (const std::unique_ptr<Graph>& segment : segments_) {
      segment->release_executable();
    }
  }

  /// Drops every segment and island: the graph is empty and can capture again. The pool's
  /// blocks go back to it (after the last replay, as for any graph of the pool).
  void reset() noexcept {
    islands_.clear();
    island_scopes_.clear();
    segments_.clear();
    shared_pool_ = given_pool_;
    ++generation_;
  }

  /// True before the first capture and after reset().
  [[nodiscard]] bool empty() const noexcept { return segments_.empty(); }
  /// empty, capturing (during capture()), or instantiated: every segment is instantiated at its
  /// end (the last segment's state). What verify() asks.
  [[nodiscard]] graph_state state() const noexcept {
    return segments_.empty() ? graph_state::empty : segments_.back()->state();
  }
  /// The number of graph segments (islands + 1 once captured; 0 when empty).
  [[nodiscard]] std::size_t segment_count() const noexcept { return segments_.size(); }
  /// The number of eager islands.
  [[nodiscard]] std::size_t island_count() const noexcept { return islands_.size(); }
  /// The mark() scopes island `k` sits in, outermost first ("a/b"; "" outside every scope);
  /// \throws std::out_of_range unless k < island_count().
  [[nodiscard]] const std::string& island_scope(std::size_t k) const {
    return island_scopes_.at(k);
  }
  /// Changes at every capture, recapture and reset(): what a rebinder tells a stale scan by.
  [[nodiscard]] std::uint32_t generation() const noexcept { return generation_; }
  /// Whether the segments keep their templates (constructed with keep_graph).
  [[nodiscard]] bool keeps_graph() const noexcept { return keep_graph_; }
  /// Segment `k`'s graph (node counts, raw_graph(), pictures). \throws std::out_of_range (bad k).
  [[nodiscard]] const Graph& segment(std::size_t k) const { return *segments_.at(k); }
  /// The nodes of every segment (each segment counts its own at the first call after its
  /// capture: basic_graph::node_count()). \throws cuda_error if CUDA cannot count.
  [[nodiscard]] std::size_t node_count() const {
    std::size_t nodes = 0;
    for (const std::unique_ptr<Graph>& segment : segments_) {
      nodes += segment->node_count();
    }
    return nodes;
  }

  /// A handle to the pool every segment draws from, as basic_graph::pool(), for other graphs to
  /// share it; before a capture it makes the pool, which stays the graph's across reset().
  template <class P = typename Graph::pool_type>
  [[nodiscard]] auto pool() {
    static_assert(P::has_handle, "graphcap: pool() needs a piecewise graph whose segments have "
                                 "a slab pool: pool::private_pool (the default), pool::shared or "
                                 "pool::sleepable");
    if constexpr (P::has_handle) {
      auto handle = !segments_.empty() ? segments_.front()->pool()
                    : shared_pool_     ? Graph{*shared_pool_}.pool()
                                       : Graph{}.pool(); // makes the pool, no CUDA call
      shared_pool_ = handle;
      given_pool_ = handle;
      return handle;
    }
  }
  /// What the segments' pool holds (reserved and in-use bytes, slabs, blocks), as
  /// basic_graph::pool_statistics(); all zero before the pool is made.
  template <class P = typename Graph::pool_type>
  [[nodiscard]] auto pool_statistics() const { // -> graphcap::pool_statistics
    static_assert(P::has_handle, "graphcap: pool_statistics() needs segments with a slab pool, "
                                 "as pool() does");
    if constexpr (P::has_handle) {
      if (shared_pool_) {
        return shared_pool_->statistics();
      }
      return segments_.empty() ? graphcap::pool_statistics{} : segments_.front()->pool_statistics();
    }
  }

private:
  template <class, class, class>
  friend class piecewise_scope;
  template <class>
  friend class rebinder; // the segments' nodes, patched (<graphcap/rebind/piecewise_rebinder.hpp>)
  template <class, class>
  friend class graph_family; // one_executable: the segments join groups by position

  // The scope of segment `k`: a fresh capture of a new segment, or a recapture of segment k
  // (of a new segment where the capture it updates had fewer).
  template <class SegmentScope>
  SegmentScope begin_segment(cudaStream_t stream, std::size_t k) {
    if constexpr (std::is_same_v<SegmentScope, typename Graph::scope>) {
      return next_segment().begin_capture(stream);
    } else {
      Graph& segment = k < segments_.size() ? *segments_[k] : next_segment();
      return segment.begin_recapture(stream);
    }
  }

  // The first segment's pool, shared from the first break on. Taken while segment 0 still
  // captures, so that the pool is shared (its give-backs wait for the device) from the first
  // capture on, the same at the capture and at every recapture.
  void share_pool() {
    if constexpr (Graph::pool_type::can_allocate) {
      if (!shared_pool_) {
        shared_pool_ = segments_.front()->pool();
      }
    }
  }

  // The graph of the next segment: the first makes the pool (unless one was given), the others
  // share it by handle.
  Graph& next_segment() {
    if constexpr (Graph::pool_type::can_allocate) {
      if (!segments_.empty()) {
        share_pool();
      }
      if (shared_pool_) {
        return *segments_.emplace_back(keep_graph_
                                           ? std::make_unique<Graph>(keep_graph, *shared_pool_)
                                           : std::make_unique<Graph>(*shared_pool_));
      }
    }
    return *segments_.emplace_back(keep_graph_ ? std::make_unique<Graph>(keep_graph)
                                               : std::make_unique<Graph>());
  }

  // replay() and replay(stream, ctx): the one check of every segment's inputs, then the
  // segments and the islands (handed `ctx...`, the context or nothing).
  template <class... Contexts>
  void replay_steps(cudaStream_t raw, Contexts&... ctx) {
    if (empty()) {
      throw state_error("graphcap: replay() of a piecewise graph that holds no capture: "
                        "capture() first");
    }
    checks_.before_replay(segments_, raw, key()); // every input, once, before any launch
    for (std::size_t k = 0; k < segments_.size(); ++k) {
      if (segments_[k]->node_count() != 0) { // an island at the start or two in a row
        detail::policy_access::replay_checked(*segments_[k], raw, key());
      }
      if (k < islands_.size()) {
        detail::piecewise::run_island(islands_[k], k, island_scopes_[k], raw, ctx...);
      }
    }
  }

  std::vector<std::unique_ptr<Graph>> segments_; // each at a fixed address: its scope points there
  std::vector<island_type> islands_;
  std::vector<std::string> island_scopes_; // the mark() scopes each island sits in ("" if none)
  // replay()'s one liveness check of the segments' inputs (empty with liveness::off)
  [[no_unique_address]] detail::piecewise::step_liveness<typename Graph::liveness_type> checks_;
  std::optional<pool_handle> shared_pool_; // given, or set at the first break (graphs with a pool)
  std::optional<pool_handle> given_pool_;  // the pool of the constructor, kept across reset()
  bool keep_graph_ = false;                // the segments keep their templates
  std::uint32_t generation_ = 0;           // generation()
};

} // namespace graphcap
