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
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/scope.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/error.hpp>
#include <graphcap/piecewise/embed.hpp>
#include <graphcap/piecewise/island_error.hpp>
#include <graphcap/pool/default_graph.hpp>
#include <graphcap/pool/pool_handle.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
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
class piecewise_graph;

/// The capture of a piecewise graph: the current segment's capture (segment()), what a graph's
/// scope offers during a capture (forwarded to it), and eager(), which ends the segment.
/// `SegmentScope` is the segments' scope: Graph::scope for capture(), Graph::recapture_scope for
/// recapture().
template <class Graph, class SegmentScope = typename Graph::scope>
class piecewise_scope {
public:
  using graph_type = piecewise_graph<Graph>;     ///< the piecewise graph being captured
  using segment_scope = SegmentScope;            ///< the capture of one segment
  using body_scope = typename Graph::body_scope; ///< what a conditional body gets

  piecewise_scope(piecewise_scope&&) = delete;
  piecewise_scope& operator=(piecewise_scope&&) = delete;
  piecewise_scope(const piecewise_scope&) = delete;
  piecewise_scope& operator=(const piecewise_scope&) = delete;
  ~piecewise_scope() = default; // the segment's scope abandons its capture if it is still open

  /// The capture stream: the same for every segment, so work issued on it before and after an
  /// island lands in the segments around it.
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  /// The current segment's index (0 until the first eager()).
  [[nodiscard]] std::size_t segment_index() const noexcept { return owner_->islands_.size(); }
  /// The current segment's capture, for the wings that take a graph's scope (device_loop(),
  /// library streams). It changes at every eager(): do not keep it across one.
  [[nodiscard]] segment_scope& segment() { return *current_; }

  /// Ends the current segment, records `island` (a callable taking the replay's cudaStream_t)
  /// to run eagerly between it and the next segment at every replay, and resumes the capture
  /// into the next segment. Nothing runs now. capture_error where the segment cannot end
  /// (work forked from the capture stream and not joined, an invalidated capture: the message
  /// names the break) or where the call comes from inside a conditional body.
  template <class Island>
  void eager(Island&& island) {
    static_assert(std::is_invocable_v<Island&, cudaStream_t>,
                  "graphcap: eager(island) needs a callable taking the replay's stream "
                  "(cudaStream_t): it runs at every replay, on the stream replay() was given");
    if (body_depth_ > 0) {
      throw capture_error(cudaErrorStreamCaptureUnsupported, "piecewise_scope::eager()",
                          "an island cannot sit inside a conditional body (if_, if_else, "
                          "switch_, while_): the body is part of one segment's graph; call "
                          "eager() outside the body, before or after the conditional node");
    }
    const std::size_t index = owner_->islands_.size();
    owner_->share_pool(); // before segment 0 ends: its capture and recaptures end alike
    end_segment("the break before island " + std::to_string(index));
    owner_->islands_.emplace_back(std::forward<Island>(island));
    current_.emplace(owner_->template begin_segment<SegmentScope>(stream_, index + 1));
  }

  // ---- what a segment's scope offers, forwarded to the current segment -------------------

  /// graphcap::embed(cap.segment(), graph): `graph`'s kept template as one child-graph node of
  /// the current segment (<graphcap/piecewise/embed.hpp>).
  template <class Embedded>
  void embed(const Embedded& graph) {
    graphcap::embed(*current_, graph);
  }

  /// cap.segment().allocate<T>(count): a block of the one pool, at a fixed address.
  template <class T, class... Rest>
  [[nodiscard]] T* allocate(Rest&&... rest) {
    return current_->template allocate<T>(std::forward<Rest>(rest)...);
  }
  /// cap.segment().make_buffer<T>(count).
  template <class T, class... Rest>
  [[nodiscard]] auto make_buffer(Rest&&... rest) {
    return current_->template make_buffer<T>(std::forward<Rest>(rest)...);
  }
  /// cap.segment().deallocate(pointer).
  template <class T, class... Rest>
  void deallocate(T* pointer, Rest&&... rest) {
    current_->deallocate(pointer, std::forward<Rest>(rest)...);
  }
  /// cap.segment().mark(...): a scope that tags the current segment's nodes (it closes at the
  /// segment's end at the latest).
  template <class... Arguments>
  [[nodiscard]] auto mark(Arguments&&... arguments) {
    return current_->mark(std::forward<Arguments>(arguments)...);
  }
  /// cap.segment().mark({...}).
  [[nodiscard]] auto mark(std::initializer_list<annotation_entry> entries) {
    return current_->mark(entries);
  }
  /// cap.segment().input(...): an input the current segment reaches indirectly.
  template <class... Arguments>
  void input(Arguments&&... arguments) {
    current_->input(std::forward<Arguments>(arguments)...);
  }

  /// cap.segment().condition(...) (<graphcap/control_flow.hpp>).
  template <class... Arguments>
  [[nodiscard]] auto condition(Arguments&&... arguments) {
    return current_->condition(std::forward<Arguments>(arguments)...);
  }
  /// cap.segment().if_(flag, body); eager() inside `body` is a capture_error.
  template <class Flag, class Body>
  void if_(const Flag& flag, Body&& body) {
    current_->if_(flag, in_body(body));
  }
  /// cap.segment().if_else(flag, then_body, else_body).
  template <class Flag, class Then, class Else>
  void if_else(const Flag& flag, Then&& then_body, Else&& else_body) {
    current_->if_else(flag, in_body(then_body), in_body(else_body));
  }
  /// cap.segment().switch_(flag, bodies...).
  template <class Flag, class... Bodies>
  void switch_(const Flag& flag, Bodies&&... bodies) {
    current_->switch_(flag, in_body(bodies)...);
  }
  /// cap.segment().while_(flag, body).
  template <class Flag, class Body>
  void while_(const Flag& flag, Body&& body) {
    current_->while_(flag, in_body(body));
  }

private:
  friend class piecewise_graph<Graph>;

  piecewise_scope(piecewise_graph<Graph>& owner, cudaStream_t stream)
      : owner_(&owner), stream_(stream) {}

  // Ends the current segment; a failure names where (`where`) and the segment.
  void end_segment(const std::string& where) {
    try {
      current_->end();
      if constexpr (requires { current_->update(); }) {
        updates_.push_back(current_->update());
      }
    } catch (const cuda_error& failure) {
      throw capture_error(failure.code(),
                          "piecewise capture: segment " + std::to_string(segment_index()) +
                              ", ended at " + where,
                          std::string{failure.what()} +
                              ". Work forked from the capture stream must be joined back "
                              "before a break (cap.eager()) and before the end of the capture" +
                              (segment_index() > 0 ? earlier_event_hint : ""));
    }
  }

  static constexpr const char* earlier_event_hint =
      "; and an event recorded in an earlier segment cannot be waited on in a later one (CUDA "
      "refuses the wait with cudaErrorInvalidValue and invalidates the capture): record and "
      "wait in one segment, or wait in an island";

  // A body that counts itself, so that eager() inside it is refused.
  template <class Body>
  auto in_body(Body& body) {
    return [this, &body](auto& body_capture) {
      ++body_depth_;
      try {
        detail::invoke_work(body_capture, body);
      } catch (...) {
        --body_depth_;
        throw;
      }
      --body_depth_;
    };
  }

  piecewise_graph<Graph>* owner_;
  cudaStream_t stream_;
  std::optional<segment_scope> current_;
  std::vector<update_result> updates_; // a recapture's, one per segment ended
  int body_depth_ = 0;
};

/// A step captured as segments of `Graph` with eager islands between them (see the top of this
/// file). Replays segment 0, island 0, segment 1, ... on one stream.
template <class Graph = graphcap::graph>
class piecewise_graph {
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
  using segment_type = Graph;           ///< the graph of one segment
  using scope = piecewise_scope<Graph>; ///< what capture(work) hands `work`
  /// What recapture(work) hands `work`.
  using recapture_scope = piecewise_scope<Graph, typename Graph::recapture_scope>;
  using island_type = std::function<void(cudaStream_t)>; ///< what runs between two segments

  /// An empty piecewise graph. Makes no CUDA call: the first capture does.
  piecewise_graph() = default;
  /// Takes `other`'s capture; `other` is left empty.
  piecewise_graph(piecewise_graph&&) noexcept = default;
  /// Drops this graph's capture, then takes `other`'s.
  piecewise_graph& operator=(piecewise_graph&&) noexcept = default;
  piecewise_graph(const piecewise_graph&) = delete;
  piecewise_graph& operator=(const piecewise_graph&) = delete;
  ~piecewise_graph() = default;

  /// Captures what `work` issues on `stream`; `work` takes the scope (`auto&` or
  /// `piecewise_graph::scope&`), the stream, or nothing, and may call cap.eager(island) any
  /// number of times. Returns what `work` returns. If `work` throws or a segment cannot be
  /// captured, every segment is dropped (the graph is empty again, nothing is left capturing)
  /// and the exception propagates. state_error if the graph holds a capture (reset() first).
  template <class Work>
  decltype(auto) capture(stream_ref stream, Work&& work) {
    if (!empty()) {
      throw state_error("graphcap: capture() on a piecewise graph that holds a capture: call "
                        "reset() first");
    }
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

  /// Captures `work` again and makes every segment's executable match its new capture:
  /// segment k is updated in place (cudaGraphExecUpdate) where CUDA allows it and instantiated
  /// anew otherwise, as basic_graph::recapture() does, and the islands are the new ones.
  /// Returns one update_result per segment, in order (each says what happened and why). A
  /// recapture with more breaks than before captures the extra segments fresh (their result:
  /// instantiated); one with fewer drops the segments left over. The pool hands each segment
  /// the blocks of its previous capture in the same order. If `work` throws or a segment cannot
  /// be captured, the graph is left empty, as after a failed capture.
  template <class Work>
  std::vector<update_result> recapture(stream_ref stream, Work&& work) {
    islands_.clear();
    try {
      recapture_scope cap{*this, stream.get()};
      cap.current_.emplace(begin_segment<typename Graph::recapture_scope>(stream.get(), 0));
      detail::invoke_work(cap, std::forward<Work>(work));
      cap.end_segment("the end of the capture");
      segments_.resize(islands_.size() + 1); // fewer breaks than before: the rest is dropped
      return std::move(cap.updates_);
    } catch (...) {
      reset();
      throw;
    }
  }

  /// Replays segment 0, runs island 0 eagerly on `stream`, replays segment 1, and so on. With
  /// liveness::check every segment's inputs are checked before anything is launched. An island
  /// that throws stops the replay there: island_error (its exception nested); the graph stays
  /// replayable. state_error before a capture.
  void replay(stream_ref stream = {}) {
    if (empty()) {
      throw state_error("graphcap: replay() of a piecewise graph that holds no capture: "
                        "capture() first");
    }
    const cudaStream_t raw = stream.get();
    for (std::size_t k = 1; k < segments_.size(); ++k) { // segment 0 checks its own, first
      detail::policy_access::liveness(*segments_[k]).before_replay(raw);
    }
    for (std::size_t k = 0; k < segments_.size(); ++k) {
      if (segments_[k]->node_count() != 0) { // an island at the start or two in a row
        segments_[k]->replay(stream);
      }
      if (k < islands_.size()) {
        run_island(k, raw);
      }
    }
  }

  /// Drops every segment and island: the graph is empty and can capture again. The pool's
  /// blocks go back to it (after the last replay, as for any graph of the pool).
  void reset() noexcept {
    islands_.clear();
    segments_.clear();
    shared_pool_.reset();
  }

  /// True before the first capture and after reset().
  [[nodiscard]] bool empty() const noexcept { return segments_.empty(); }
  /// empty, capturing (during capture()), or instantiated: every segment is instantiated at its
  /// end. What verify() asks (<graphcap/verify.hpp> compares a piecewise step with its work run
  /// eagerly, as it does a graph).
  [[nodiscard]] graph_state state() const noexcept {
    return segments_.empty() ? graph_state::empty : segments_.back()->state();
  }
  /// The number of graph segments (islands + 1 once captured; 0 when empty).
  [[nodiscard]] std::size_t segment_count() const noexcept { return segments_.size(); }
  /// The number of eager islands.
  [[nodiscard]] std::size_t island_count() const noexcept { return islands_.size(); }
  /// Segment `k`'s graph (for node counts, raw_graph(), pictures); k < segment_count().
  [[nodiscard]] const Graph& segment(std::size_t k) const { return *segments_.at(k); }
  /// The nodes of every segment.
  [[nodiscard]] std::size_t node_count() const noexcept {
    std::size_t nodes = 0;
    for (const std::unique_ptr<Graph>& segment : segments_) {
      nodes += segment->node_count();
    }
    return nodes;
  }

private:
  template <class, class>
  friend class piecewise_scope;

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
  // captures, so that its end (which adds the pool's completion marker once the pool is
  // shared) is the same at the capture and at every recapture: a recapture can update it.
  void share_pool() {
    if constexpr (Graph::pool_type::can_allocate) {
      if (!shared_pool_) {
        shared_pool_ = segments_.front()->pool();
      }
    }
  }

  // The graph of the next segment: the first makes the pool, the others share it by handle.
  Graph& next_segment() {
    if constexpr (Graph::pool_type::can_allocate) {
      if (!segments_.empty()) {
        share_pool();
        return *segments_.emplace_back(std::make_unique<Graph>(*shared_pool_));
      }
    }
    return *segments_.emplace_back(std::make_unique<Graph>());
  }

  void run_island(std::size_t k, cudaStream_t stream) {
    try {
      islands_[k](stream);
    } catch (const std::exception& failure) {
      std::throw_with_nested(island_error(k, failure.what()));
    } catch (...) {
      std::throw_with_nested(island_error(k, "an exception not derived from std::exception"));
    }
  }

  std::vector<std::unique_ptr<Graph>> segments_; // each at a fixed address: its scope points there
  std::vector<island_type> islands_;
  std::optional<pool_handle> shared_pool_; // set at the first break (graphs with a pool)
};

} // namespace graphcap
