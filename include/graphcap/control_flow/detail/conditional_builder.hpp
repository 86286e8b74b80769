// graphcap/control_flow/detail/conditional_builder.hpp - what adds a conditional node to a
// capture and captures its bodies: builder<Scope>, behind conditional.hpp's free functions. It
// reaches the scope through the core's one seam (detail::scope_services, with its key).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/condition.hpp>
#include <graphcap/control_flow/detail/body_streams.hpp>
#include <graphcap/control_flow/detail/condition_uses.hpp>
#include <graphcap/control_flow/detail/conditional_rules.hpp>
#include <graphcap/core/detail/capture.hpp>
#include <graphcap/core/scope.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace graphcap {

namespace detail::control_flow {

/// Builds conditional nodes in the capture of `Scope` (any kind of scope of one graph type).
template <class Scope>
struct builder : core_extension {
  using graph_type = typename Scope::graph_type;
  using body_scope = graphcap::body_scope<graph_type>;

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
    detail::contract::note_conditional(scope_services::lifecycle(cap, key()).annot(key()), node,
                                       construct, body_graphs);
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
    detail::contract::add_body(scope_services::lifecycle(cap, key()).liveness(key()),
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
    detail::contract::hand_over_stream(scope_services::lifecycle(cap, key()).pool(key()),
                                       cap.stream(), stream);
    detail::contract::add_body(scope_services::lifecycle(cap, key()).annot(key()), node, graph,
                               stream); // tags body nodes
    cudaStream_t root = cap.stream();
    if constexpr (std::is_same_v<typename Scope::kind_type, capture_kind::body>) {
      root = scope_services::kind(cap).root;
    }
    scope_services::run_nested(
        cap, key(), stream,
        capture_kind::body{{}, graph, construct, index, std::move(lease), cap.stream(), root},
        std::forward<Body>(body));
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
                        "): create the condition with graphcap::make_condition() on the scope that "
                        "uses it");
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
                        "graphcap::make_condition(cap, initial) (the body's scope inside a body) "
                        "and set each condition from device code");
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
