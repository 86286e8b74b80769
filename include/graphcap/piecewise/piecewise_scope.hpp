// graphcap/piecewise/piecewise_scope.hpp - the capture scope of a piecewise graph
// (<graphcap/piecewise/piecewise_graph.hpp>): the current segment's scope, what a graph's scope
// offers forwarded to it, and eager(), which ends a segment at an island.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/scope.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/piecewise/detail/bridges.hpp>
#include <graphcap/piecewise/detail/islands.hpp>
#include <graphcap/piecewise/detail/open_scopes.hpp>
#include <graphcap/piecewise/embed.hpp>
#include <graphcap/piecewise/piecewise_marker.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

template <class Graph, class Context>
class piecewise_graph;

/// The capture of a piecewise graph: the current segment's capture (segment()), what a graph's
/// scope offers during a capture (forwarded to it), and eager(), which ends the segment.
/// `SegmentScope` is the segments' scope: Graph::scope for capture(), Graph::recapture_scope for
/// recapture(). `Context` is the graph's per-replay context (void: none).
template <class Graph, class SegmentScope = typename Graph::scope, class Context = void>
class piecewise_scope {
public:
  using graph_type = piecewise_graph<Graph, Context>; ///< the piecewise graph being captured
  using segment_scope = SegmentScope;                 ///< the capture of one segment
  using body_scope = graphcap::body_scope<Graph>;     ///< what a conditional body gets

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

  /// Ends the current segment, records `island` (a callable taking the replay's cudaStream_t;
  /// for a piecewise_graph<Graph, Context>, or taking the stream and the replay's Context&)
  /// to run eagerly between it and the next segment at every replay, and resumes the capture
  /// into the next segment. Nothing runs now. capture_error where the segment cannot end
  /// (work forked from the capture stream and not joined, an invalidated capture: the message
  /// names the break) or where the call comes from inside a conditional body.
  template <class Island>
  void eager(Island&& island) {
    auto kept = detail::piecewise::make_island<Context>(std::forward<Island>(island));
    if (body_depth_ > 0) {
      throw capture_error(cudaErrorStreamCaptureUnsupported, "piecewise_scope::eager()",
                          "an island cannot sit inside a conditional body (if_, if_else, "
                          "switch_, while_): the body is part of one segment's graph; call "
                          "eager() outside the body, before or after the conditional node");
    }
    const std::size_t index = owner_->islands_.size();
    owner_->share_pool(); // before segment 0 ends: its capture and recaptures end alike
    end_segment("the break before island " + std::to_string(index));
    owner_->islands_.push_back(std::move(kept));
    owner_->island_scopes_.push_back(detail::piecewise::scope_path(*open_));
    current_.emplace(owner_->template begin_segment<SegmentScope>(stream_, index + 1));
    reopen_scopes();
  }

  // ---- what a segment's scope offers, forwarded to the current segment -------------------

  /// graphcap::embed(cap.segment(), graph): `graph`'s kept template as one child-graph node of
  /// the current segment (<graphcap/piecewise/embed.hpp>).
  template <class Embedded>
  void embed(const Embedded& graph) {
    graphcap::embed(*current_, graph);
  }

  /// cap.segment().allocate<T>(count): a block of the one pool, at a fixed address; a block an
  /// earlier segment allocated and this or an earlier one freed (a bridge) may be taken again.
  template <class T, class... Rest>
  [[nodiscard]] T* allocate(Rest&&... rest) {
    if (void* reused =
            bridges_.template reuse<T>(owner_->segments_, segment_index(), stream_, rest...)) {
      return static_cast<T*>(reused);
    }
    return current_->template allocate<T>(std::forward<Rest>(rest)...);
  }
  /// cap.segment().make_buffer<T>(count).
  template <class T, class... Rest>
  [[nodiscard]] auto make_buffer(Rest&&... rest) {
    return current_->template make_buffer<T>(std::forward<Rest>(rest)...);
  }
  /// cap.segment().deallocate(pointer), or, for a block an earlier segment allocated (a bridge
  /// across a break), the same freeing there: later allocations of the step may reuse it, and
  /// later captures of the pool as a segment's own freed blocks. bridge_error (naming the
  /// segments) for a bridge freed twice, or one of a later segment (an earlier capture's).
  template <class T, class... Rest>
  void deallocate(T* pointer, Rest&&... rest) {
    static_assert(sizeof...(Rest) <= 1, "graphcap: deallocate(pointer[, stream])");
    cudaStream_t on = stream_;
    if constexpr (sizeof...(Rest) == 1) {
      on = stream_ref(rest...).get();
    }
    if (!bridges_.deallocate(owner_->segments_, segment_index(), pointer, on)) {
      current_->deallocate(pointer, std::forward<Rest>(rest)...);
    }
  }
  /// The segment scopes' marker.
  using segment_marker = decltype(std::declval<SegmentScope&>().mark(std::string_view{}));
  /// What mark() returns: a scope that stays open across breaks (piecewise_marker).
  using marker = piecewise_marker<segment_marker>;

  /// A scope named `name` that tags the nodes captured while it lives, in this segment and,
  /// opened again at each break, in the next ones; islands issued inside it carry its name.
  [[nodiscard]] marker mark(std::string_view name) {
    auto& scope = open_->emplace_back();
    scope.label = name;
    scope.markers.push_back(current_->mark(std::string_view{scope.label}));
    return marker{open_, std::prev(open_->end())};
  }
  /// The same, with key/value pairs (opened again at a break as one nested scope per pair).
  [[nodiscard]] marker mark(std::initializer_list<annotation_entry> entries) {
    auto& scope = open_->emplace_back();
    for (const annotation_entry& entry : entries) {
      scope.entries.emplace_back(entry.first, entry.second);
      if (entry.first == "name" && scope.label.empty()) {
        scope.label = entry.second;
      }
    }
    if (scope.label.empty() && !scope.entries.empty()) {
      scope.label = scope.entries.front().first + "=" + scope.entries.front().second;
    }
    scope.markers.push_back(current_->mark(entries));
    return marker{open_, std::prev(open_->end())};
  }
  /// cap.segment().input(...): an input the current segment reaches indirectly.
  template <class... Arguments>
  void input(Arguments&&... arguments) {
    current_->input(std::forward<Arguments>(arguments)...);
  }

  /// graphcap::make_condition(cap.segment(), ...) (<graphcap/control_flow.hpp>).
  template <class... Arguments>
  [[nodiscard]] auto condition(Arguments&&... arguments) {
    return detail::spelling::call_condition(*current_, std::forward<Arguments>(arguments)...);
  }
  /// graphcap::if_(cap.segment(), flag, body); eager() inside `body` is a capture_error.
  template <class Flag, class Body>
  void if_(const Flag& flag, Body&& body) {
    detail::spelling::call_if_(*current_, flag, in_body(body));
  }
  /// graphcap::if_else(cap.segment(), flag, then_body, else_body).
  template <class Flag, class Then, class Else>
  void if_else(const Flag& flag, Then&& then_body, Else&& else_body) {
    detail::spelling::call_if_else(*current_, flag, in_body(then_body), in_body(else_body));
  }
  /// graphcap::switch_(cap.segment(), flag, bodies...).
  template <class Flag, class... Bodies>
  void switch_(const Flag& flag, Bodies&&... bodies) {
    detail::spelling::call_switch_(*current_, flag, in_body(bodies)...);
  }
  /// graphcap::while_(cap.segment(), flag, body).
  template <class Flag, class Body>
  void while_(const Flag& flag, Body&& body) {
    detail::spelling::call_while_(*current_, flag, in_body(body));
  }

private:
  friend class piecewise_graph<Graph, Context>;

  piecewise_scope(piecewise_graph<Graph, Context>& owner, cudaStream_t stream)
      : owner_(&owner), stream_(stream) {}

  // Ends the current segment; a failure of the capture itself (CUDA's stream-capture statuses)
  // names where (`where`) and the segment, any other propagates as it is.
  void end_segment(const std::string& where) {
    try {
      current_->end();
      bridges_.segment_ended(owner_->segments_);
      // Counted now, not at the first replay: replay() skips a segment of no node (an island
      // at the start, or two in a row) and must stay its launches alone.
      static_cast<void>(owner_->segments_[segment_index()]->node_count());
      if constexpr (requires { current_->update(); }) {
        updates_.push_back(current_->update());
      }
    } catch (const cuda_error& failure) {
      if (failure.code() < cudaErrorStreamCaptureUnsupported ||
          failure.code() > cudaErrorStreamCaptureWrongThread) {
        throw; // not the capture's own failure (an event, an instantiation): the call that failed
      }
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

  // The scopes open at a break, opened again in the segment that just began, outermost first.
  void reopen_scopes() {
    for (auto& scope : *open_) {
      if (scope.entries.empty()) {
        scope.markers.push_back(current_->mark(std::string_view{scope.label}));
      } else {
        for (const auto& [key, value] : scope.entries) {
          scope.markers.push_back(current_->mark({annotation_entry{key, value}}));
        }
      }
    }
  }

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

  piecewise_graph<Graph, Context>* owner_;
  cudaStream_t stream_;
  std::optional<segment_scope> current_;
  // The cap.mark() scopes alive; shared with their markers, which may outlive this scope.
  std::shared_ptr<detail::piecewise::open_scopes<segment_marker>> open_ =
      std::make_shared<detail::piecewise::open_scopes<segment_marker>>();
  std::vector<update_result> updates_;        // a recapture's, one per segment ended
  detail::piecewise::bridges<Graph> bridges_; // blocks freed in a later segment than their own
  int body_depth_ = 0;
};

/// graphcap::make_condition(cap.segment(), ...) for a piecewise capture
/// (<graphcap/control_flow.hpp>).
template <class Graph, class SegmentScope, class Context, class... Arguments>
[[nodiscard]] auto make_condition(piecewise_scope<Graph, SegmentScope, Context>& cap,
                                  Arguments&&... arguments) {
  return cap.condition(std::forward<Arguments>(arguments)...);
}
/// graphcap::if_(cap.segment(), flag, body); eager() inside `body` is a capture_error.
template <class Graph, class SegmentScope, class Context, class Flag, class Body>
void if_(piecewise_scope<Graph, SegmentScope, Context>& cap, const Flag& flag, Body&& body) {
  cap.if_(flag, std::forward<Body>(body));
}
/// graphcap::if_else(cap.segment(), flag, then_body, else_body), eager() refused as in if_().
template <class Graph, class SegmentScope, class Context, class Flag, class Then, class Else>
void if_else(piecewise_scope<Graph, SegmentScope, Context>& cap, const Flag& flag, Then&& then_body,
             Else&& else_body) {
  cap.if_else(flag, std::forward<Then>(then_body), std::forward<Else>(else_body));
}
/// graphcap::switch_(cap.segment(), flag, bodies...), eager() refused as in if_().
template <class Graph, class SegmentScope, class Context, class Flag, class... Bodies>
void switch_(piecewise_scope<Graph, SegmentScope, Context>& cap, const Flag& flag,
             Bodies&&... bodies) {
  cap.switch_(flag, std::forward<Bodies>(bodies)...);
}
/// graphcap::while_(cap.segment(), flag, body), eager() refused as in if_().
template <class Graph, class SegmentScope, class Context, class Flag, class Body>
void while_(piecewise_scope<Graph, SegmentScope, Context>& cap, const Flag& flag, Body&& body) {
  cap.while_(flag, std::forward<Body>(body));
}

} // namespace graphcap
