// graphcap/control_flow/conditional.hpp - decisions on the device inside a capture: conditions and
// the conditional nodes if_, if_else, switch_ and while_ (CUDA conditional nodes, captured).
//
//   #include <graphcap/control_flow.hpp>
//
//   graph.capture(stream, [&](auto& cap) {
//     graphcap::condition more = cap.condition(1, graphcap::reset_each_launch); // 1: loop at once
//     cap.while_(more, [&](auto& body) {          // captured once, into the node's body
//       step<<<blocks, threads, 0, body.stream()>>>(state, more);  // more.set(0) to stop
//     });
//   });
//
// A body is a callable of the shapes capture() takes (the body's scope, its stream, or nothing). It
// is captured on a stream graphcap owns (in relaxed mode: the parent's capture mode guards the
// thread), into the body graph CUDA made for the node; the body scope offers what the parent does
// (allocate from the graph's pool, conditions and nested conditionals, work forked to other streams
// and joined back). A body may hold kernel, memset, memcpy, empty, child-graph and conditional
// nodes only (CUDA's rule): any other node (a graph memory node, an event record or wait, a host
// node) ends the whole capture with a capture_error naming the node, the body and the rule.
// docs/control-flow.md. The lean core never includes this header.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/detail/body_capture_end.hpp>
#include <graphcap/control_flow/detail/body_streams.hpp>
#include <graphcap/control_flow/detail/condition_uses.hpp>
#include <graphcap/control_flow/detail/conditional_rules.hpp>
#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/detail/capture.hpp>
#include <graphcap/core/scope.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace graphcap {

/// A condition owned by a graph: what its conditional nodes decide on. Trivially copyable, so it
/// is passed to kernels by value; device code sets it with set() (cudaGraphSetConditional).
class condition {
public:
  /// No condition (a default-constructed value is not usable by a conditional node).
  GRAPHCAP_HOST_DEVICE constexpr condition() noexcept {} // NOLINT: = default is not __device__

  /// The CUDA handle, for code that calls cudaGraphSetConditional itself.
  [[nodiscard]] GRAPHCAP_HOST_DEVICE constexpr cudaGraphConditionalHandle handle() const noexcept {
    return handle_;
  }
  /// The graph it belongs to (the graph, or the conditional body, being captured at creation).
  [[nodiscard]] GRAPHCAP_HOST_DEVICE constexpr cudaGraph_t graph() const noexcept { return graph_; }

#if defined(__CUDACC__)
  /// Sets the condition's value, from device code (one thread: racing sets are undefined).
  __device__ void set(unsigned value) const {
    cudaGraphSetConditional(handle_, value);
  }
#endif

private:
  template <class>
  friend struct detail::control_flow::builder;
  constexpr condition(cudaGraphConditionalHandle handle, cudaGraph_t graph,
                      unsigned long long capture) noexcept
      : handle_(handle), graph_(graph), capture_(capture) {}

  cudaGraphConditionalHandle handle_ = 0;
  cudaGraph_t graph_ = nullptr;
  unsigned long long capture_ = 0; // the capture it was made in: graph handles are reused
};

#if defined(__CUDACC__)
/// Sets `flag` to `value` from device code: `graphcap::set(flag, 0)`.
__device__ inline void set(const condition& flag, unsigned value) {
  flag.set(value);
}
#endif

namespace capture_kind {

/// A conditional node's body: captured into the body graph on a stream graphcap owns; its end()
/// checks CUDA's body rules and ends only the body's capture, and its abandonment leaves the
/// parent capture to the parent's scope.
struct body {
  static constexpr bool is_conditional_body = true; ///< what pool checks look for

  cudaGraph_t graph = nullptr;                   ///< the body graph CUDA made for the node
  const char* construct = "";                    ///< "while_", "if_", ... for messages
  unsigned index = 0;                            ///< which body of the node
  detail::control_flow::body_stream_lease lease; ///< the stream it is captured on
  cudaStream_t parent = nullptr;                 ///< the stream of the scope that added the node
  cudaStream_t root = nullptr;                   ///< the stream of the outermost capture

  /// Ends the body's capture and checks what it captured (the parent's capture goes on).
  /// A body that left work forked to another stream unjoined, or whose capture was invalidated,
  /// is a capture_error; CUDA keeps the body graph either way
  /// (detail::control_flow::end_body_capture).
  template <class Lifecycle>
  void end(Lifecycle& lifecycle, cudaStream_t stream) {
    hand_over(lifecycle, stream, parent);
    switch (detail::control_flow::end_body_capture(stream, graph, parent, root)) {
    case detail::control_flow::body_capture_end::ended:
      break;
    case detail::control_flow::body_capture_end::joined_work:
      detail::control_flow::refuse_unjoined_body(construct, index);
    case detail::control_flow::body_capture_end::left_open:
      lease.keep(); // CUDA would destroy the body graph if this capture ended
      detail::control_flow::refuse_invalidated_body(construct, index, stream);
    case detail::control_flow::body_capture_end::root_ended:
      detail::control_flow::refuse_invalidated_body(construct, index, stream);
    }
    detail::control_flow::check_body_rules(graph, construct, index);
  }

  /// Abandons the body's capture only: the parent scope discards the rest.
  template <class Lifecycle>
  void abandon(Lifecycle& lifecycle, cudaStream_t stream) noexcept {
    forget(lifecycle, stream);
    if (detail::control_flow::end_body_capture(stream, graph, parent, root) ==
        detail::control_flow::body_capture_end::left_open) {
      lease.keep();
    }
  }

private:
  /// Blocks freed on the body's stream become the parent stream's to reuse: what the parent's
  /// stream captures next (later work, the next conditional's bodies) depends on the node, so
  /// runs after the body, every iteration of it.
  template <class Lifecycle>
  static void hand_over(Lifecycle& lifecycle, cudaStream_t stream, cudaStream_t to) noexcept {
    detail::contract::hand_over_stream(lifecycle.pool(detail::policy_key{}), stream, to);
  }

  /// An abandoned body: nothing freed on its stream is reused (the capture is being discarded).
  template <class Lifecycle>
  static void forget(Lifecycle& lifecycle, cudaStream_t stream) noexcept {
    detail::contract::forget_stream(lifecycle.pool(detail::policy_key{}), stream);
  }
};

} // namespace capture_kind

namespace detail::control_flow {

/// Builds conditional nodes in the capture of `Scope` (any kind of scope of one graph type).
template <class Scope>
struct builder {
  using graph_type = typename Scope::graph_type;
  using body_scope = basic_scope<graph_type, capture_kind::body>;

  template <class Initial>
  static graphcap::condition condition(Scope& cap, Initial initial, condition_reset reset) {
    static_assert(std::is_integral_v<Initial>,
                  "graphcap: condition(initial) takes an integer: the condition's value at the "
                  "start of a launch (0 or 1 for if_ and while_, a body's index for switch_)");
    if constexpr (std::is_integral_v<Initial>) { // otherwise: the error above, and no other
      return make_condition(cap, initial_value(initial), reset);
    } else {
      return graphcap::condition{};
    }
  }

private:
  /// `initial` as the unsigned a condition holds; std::invalid_argument (nothing created) when
  /// it is negative or over UINT_MAX, which a conversion would turn into another value.
  template <class Initial>
  static unsigned initial_value(Initial initial) {
    bool fits = true;
    if constexpr (std::is_signed_v<Initial>) {
      fits = initial >= Initial{0};
    }
    if (fits && static_cast<std::uintmax_t>(initial) > std::numeric_limits<unsigned>::max()) {
      fits = false;
    }
    if (!fits) [[unlikely]] {
      throw std::invalid_argument(
          "graphcap: condition() was given the initial value " + std::to_string(initial) +
          ", which an unsigned condition cannot hold (0 to UINT_MAX: 0 or 1 for if_ and "
          "while_, a body's index for switch_); nothing was created");
    }
    return static_cast<unsigned>(initial);
  }

  static graphcap::condition make_condition(Scope& cap, unsigned initial, condition_reset reset) {
    const capture_point point = capture_point_of(cap.stream(), "condition()");
    cudaGraphConditionalHandle handle = 0;
    check(cudaGraphConditionalHandleCreate(&handle, point.graph, initial,
                                           reset == condition_reset::each_launch
                                               ? static_cast<unsigned>(cudaGraphCondAssignDefault)
                                               : 0U),
          "cudaGraphConditionalHandleCreate");
    return graphcap::condition{handle, point.graph, point.capture};
  }

public:
  template <class Body>
  static void if_(Scope& cap, const graphcap::condition& flag, Body&& body) {
    add(cap, flag, cudaGraphCondTypeIf, "if_", std::forward<Body>(body));
  }

  template <class Then, class Else>
  static void if_else(Scope& cap, const graphcap::condition& flag, Then&& then_body,
                      Else&& else_body) {
    require_driver(12080, "if_else()");
    add(cap, flag, cudaGraphCondTypeIf, "if_else", std::forward<Then>(then_body),
        std::forward<Else>(else_body));
  }

  template <class... Bodies>
  static void switch_(Scope& cap, const graphcap::condition& flag, Bodies&&... bodies) {
    static_assert(sizeof...(Bodies) > 0,
                  "graphcap: switch_() needs at least one body: switch_(flag, body0, body1, ...)");
    require_driver(12080, "switch_()");
    add(cap, flag, cudaGraphCondTypeSwitch, "switch_", std::forward<Bodies>(bodies)...);
  }

  template <class Body>
  static void while_(Scope& cap, const graphcap::condition& flag, Body&& body) {
    add(cap, flag, cudaGraphCondTypeWhile, "while_", std::forward<Body>(body));
  }

private:
  /// Adds the node after the capture's current work, makes later work depend on it, and
  /// captures each body into the body graphs CUDA made.
  template <class... Bodies>
  static void add(Scope& cap, const graphcap::condition& flag, cudaGraphConditionalNodeType type,
                  const char* construct, Bodies&&... bodies) {
    static_assert((body_callable<Bodies> && ...),
                  "graphcap: a conditional body must be a callable taking the body's scope "
                  "(auto&), its stream (cudaStream_t), or nothing");
    const capture_point point = capture_point_of(cap.stream(), construct);
    require_owned_by(flag, point, construct);
    require_unused(flag, point, construct);
    std::array<cudaGraph_t, sizeof...(Bodies)> body_graphs{};
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = flag.handle();
    params.conditional.type = type;
    params.conditional.size = static_cast<unsigned>(sizeof...(Bodies));
    params.conditional.phGraph_out = body_graphs.data();
    cudaGraphNode_t node = nullptr;
    check_in_capture(
        cudaGraphAddNode(&node, point.graph, point.dependencies, point.edges, point.count, &params),
        "cudaGraphAddNode (conditional)");
    condition_uses::add({point.capture, point.graph, flag.handle(), construct});
    // CUDA writes the bodies into its own array; copy them out before the next call.
    for (std::size_t i = 0; i < body_graphs.size(); ++i) {
      body_graphs[i] = params.conditional.phGraph_out[i];
    }
    // for write_dot
    detail::contract::note_conditional(cap.lifecycle_of().annot(policy_key{}), node, construct,
                                       body_graphs);
    check_in_capture(cudaStreamUpdateCaptureDependencies(cap.stream(), &node, nullptr, 1,
                                                         cudaStreamSetCaptureDependencies),
                     "cudaStreamUpdateCaptureDependencies");
    capture_bodies(cap, node, body_graphs, construct, std::index_sequence_for<Bodies...>{},
                   std::forward<Bodies>(bodies)...);
  }

  template <std::size_t Count, std::size_t... Index, class... Bodies>
  static void capture_bodies(Scope& cap, cudaGraphNode_t node,
                             const std::array<cudaGraph_t, Count>& graphs, const char* construct,
                             std::index_sequence<Index...> /*indices*/, Bodies&&... bodies) {
    (capture_body(cap, node, graphs[Index], construct, static_cast<unsigned>(Index),
                  std::forward<Bodies>(bodies)),
     ...);
  }

  template <class Body>
  static void capture_body(Scope& cap, cudaGraphNode_t node, cudaGraph_t graph,
                           const char* construct, unsigned index, Body&& body) {
    detail::contract::add_body(cap.lifecycle_of().liveness(policy_key{}),
                               graph); // scanned by liveness::check
    body_stream_lease lease = body_stream_lease::take();
    const cudaStream_t stream = lease.stream();
    // Relaxed: the parent's capture already guards this thread (and, in global mode, the
    // others) against capture-unsafe calls, and such a call then invalidates the parent alone;
    // a body capture that CUDA invalidates cannot be ended without losing the body graph.
    check_in_capture(cudaStreamBeginCaptureToGraph(stream, graph, nullptr, nullptr, 0,
                                                   cudaStreamCaptureModeRelaxed),
                     "cudaStreamBeginCaptureToGraph");
    // What the parent's stream freed so far ran before the node: the body may reuse it (the
    // body's end hands it back, with what the body freed).
    detail::contract::hand_over_stream(cap.lifecycle_of().pool(policy_key{}), cap.stream(), stream);
    detail::contract::add_body(cap.lifecycle_of().annot(policy_key{}), node, graph,
                               stream); // tags body nodes
    cudaStream_t root = cap.stream();
    if constexpr (std::is_same_v<typename Scope::kind_type, capture_kind::body>) {
      root = cap.kind_.root;
    }
    body_scope scope{
        cap.lifecycle_of(), stream,
        capture_kind::body{graph, construct, index, std::move(lease), cap.stream(), root}};
    body_scope::run(std::move(scope), std::forward<Body>(body));
  }

  template <class Body>
  static constexpr bool body_callable =
      std::is_invocable_v<Body, body_scope&> || std::is_invocable_v<Body, cudaStream_t> ||
      std::is_invocable_v<Body>;

  static void require_owned_by(const graphcap::condition& flag, const capture_point& point,
                               const char* construct) {
    const cudaGraph_t graph = point.graph;
    if (flag.graph() != graph || flag.capture_ != point.capture || flag.handle() == 0)
        [[unlikely]] {
      throw state_error(std::string{"graphcap: "} + construct +
                        "() was given a condition that does not belong to the graph it captures "
                        "into (the condition belongs to graph " +
                        describe_graph(flag.graph()) + " of capture " +
                        std::to_string(flag.capture_) + ", the node would go into graph " +
                        describe_graph(graph) + " of capture " + std::to_string(point.capture) +
                        "): create the condition with condition() on the scope that uses it");
    }
  }

  /// A condition serves one node (CUDA's rule): a second is a state_error naming the first.
  static void require_unused(const graphcap::condition& flag, const capture_point& point,
                             const char* construct) {
    if (const char* first = condition_uses::find(point.capture, point.graph, flag.handle()))
        [[unlikely]] {
      throw state_error(std::string{"graphcap: "} + construct +
                        "() was given a condition that already serves the " + first +
                        "() node of this capture: a condition serves one conditional node (CUDA "
                        "refuses a second node on it); make one for this node with "
                        "cap.condition(initial) (body.condition(initial) inside a body) and set "
                        "each condition from device code");
    }
  }

  static void require_driver(int needed, const char* construct) {
    int driver = 0;
    check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    if (driver < needed) [[unlikely]] {
      throw error(std::string{"graphcap: "} + construct + " needs a CUDA driver for CUDA " +
                  std::to_string(needed / 1000) + "." + std::to_string(needed % 1000 / 10) +
                  " or newer; this one is for CUDA " + std::to_string(driver / 1000) + "." +
                  std::to_string(driver % 1000 / 10) +
                  ": use if_() with a second condition, or update the driver");
    }
  }
};

} // namespace detail::control_flow
} // namespace graphcap
