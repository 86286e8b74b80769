// graphcap/core/wing_contract.hpp - the optional hooks of the policy contract that only a wing
// calls (#49): core/policy.hpp keeps the required hooks and the capabilities the core calls
// itself; these serve conditional bodies (control_flow/), rebinding (rebind/) and pictures
// (inspection/). The same rules as core/policy.hpp's: a wing calls a hook only through
// detail::contract below, which gives a policy without it the default written next to it, and
// a model asserts every capability it offers next to its definition.
//
//   capability                    hook(s)                                default        wing
//   pool_across_streams           hand_over_stream(from, to) noexcept,   nothing to control_flow
//                                 forget_stream(stream) noexcept         hand over
//   pool_with_memory_nodes        static allocates_graph_nodes == true   false: may control_flow
//                                                                        serve a body
//   annotation_across_bodies      note_conditional(node, construct,      nothing control_flow
//                                 bodies), add_body(node, graph, stream) recorded
//   liveness_across_bodies        add_body(graph)                        bodies not control_flow
//                                                                        scanned
//   annotation_with_layout        layout() const -> detail::graph_layout no layout      inspection,
//                                                                        (plain DOT)    rebind
//   liveness_that_rebinds         rebound(from, bytes, to): inputs in    nothing        rebind
//                                 [from, from + bytes) moved to `to`     tracked
//   policy_with_bodies            conditional_bodies() const: the last   no bodies      rebind
//                                 capture's conditional bodies           known (a rebinder
//                                                                        refuses graphs with
//                                                                        conditional nodes)
//   liveness_across_segments      typename step_check: several graphs'   each segment   piecewise
//                                 inputs as one (current(parts),         checks its own
//                                 rebuild(parts), before_replay(stream))
//   pool_with_bridges             static gives_back_at_capture_end       blocks stay in piecewise
//                                 (bool): a slab pool whose blocks can   their segment
//                                 be freed in a later segment
//   pool_with_handle_type         typename handle_type: the pool_handle  pool_handle     pool,
//                                 kind a new pool of this policy needs                  families
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <span>

namespace graphcap {

/// Pool: blocks freed on one capture stream can be handed to another (a conditional body's
/// stream and back), or forgotten with an abandoned body's stream.
template <class P>
concept pool_across_streams = requires(P& pool, cudaStream_t stream) {
  { pool.hand_over_stream(stream, stream) }
  noexcept;
  { pool.forget_stream(stream) }
  noexcept;
};
/// Pool: allocates with CUDA graph memory nodes (static allocates_graph_nodes = true), which no
/// conditional body and no child graph may hold.
template <class P>
concept pool_with_memory_nodes = P::allocates_graph_nodes == true;

/// Annot: records conditional nodes and tags the nodes of their bodies.
template <class A>
concept annotation_across_bodies = requires(A& annot, cudaGraphNode_t node, cudaGraph_t graph,
                                            cudaStream_t stream, const char* construct) {
  { annot.add_body(node, graph, stream) }
  noexcept;
  annot.note_conditional(node, construct, std::span<const cudaGraph_t>{});
};
/// Annot: layout() gives the scopes and bodies write_dot() draws.
template <class A>
concept annotation_with_layout = requires(const A& annot) {
  annot.layout();
};

/// Liveness: add_body(graph) scans a conditional body's nodes too.
template <class L>
concept liveness_across_bodies = requires(L& live, cudaGraph_t body) {
  live.add_body(body);
};

/// Liveness: rebound(from, bytes, to) moves the inputs it tracks in [from, from + bytes) to the
/// same offsets from `to` (graphcap::rebinder patched the executable), and checks them there
/// from the next replay on. Throws (and changes nothing) if `to` cannot be checked.
template <class L>
concept liveness_that_rebinds = requires(L& live, const void* from, std::size_t bytes) {
  live.rebound(from, bytes, from);
};
/// Any policy: conditional_bodies() lists the last capture's conditional bodies, nested ones
/// too (CUDA 13.0 lists no body among a graph's nodes, so only what the capture saw knows them).
template <class P>
concept policy_with_bodies = requires(const P& policy) {
  { policy.conditional_bodies() } -> std::convertible_to<std::span<const cudaGraph_t>>;
};

/// Liveness: step_check checks the inputs of several graphs of this policy (a piecewise graph's
/// segments) as one, each allocation once: current(parts) says whether it was built from these
/// parts as they are now, rebuild(parts) builds it, before_replay(stream) refuses a step whose
/// input died (the error naming it) before anything is launched.
template <class L>
concept liveness_across_segments = requires(typename L::step_check& step,
                                            const typename L::step_check& built,
                                            std::span<const L* const> parts, cudaStream_t stream) {
  { built.current(parts) }
  noexcept->std::same_as<bool>;
  step.rebuild(parts);
  built.before_replay(stream);
};

/// Pool: a slab pool (gives_back_at_capture_end says when a capture's freed blocks go back)
/// whose blocks a piecewise graph may free in a later segment than their own (a bridge).
template <class P>
concept pool_with_bridges = requires {
  { P::gives_back_at_capture_end } -> std::convertible_to<bool>;
};
/// Pool: handle_type names the pool_handle kind a new pool of this policy needs
/// (pool::sleepable: sleepable_pool_handle).
template <class P>
concept pool_with_handle_type = requires {
  typename P::handle_type;
};

namespace detail::contract {

// The wings' calls of these hooks (the default where one is lacking).

template <class P>
void hand_over_stream(P& pool, cudaStream_t from, cudaStream_t to) noexcept {
  if constexpr (pool_across_streams<P>) {
    pool.hand_over_stream(from, to);
  }
}

template <class P>
void forget_stream(P& pool, cudaStream_t stream) noexcept {
  if constexpr (pool_across_streams<P>) {
    pool.forget_stream(stream);
  }
}

template <class P>
inline constexpr bool allocates_graph_nodes = pool_with_memory_nodes<P>;

template <class A, class Bodies>
void note_conditional(A& annot, cudaGraphNode_t node, const char* construct, const Bodies& bodies) {
  if constexpr (annotation_across_bodies<A>) {
    annot.note_conditional(node, construct, bodies);
  }
}

template <class A>
void add_body(A& annot, cudaGraphNode_t node, cudaGraph_t graph, cudaStream_t stream) noexcept {
  if constexpr (annotation_across_bodies<A>) {
    annot.add_body(node, graph, stream);
  }
}

template <class L>
void add_body(L& live, cudaGraph_t body) {
  if constexpr (liveness_across_bodies<L>) {
    live.add_body(body);
  }
}

template <class L>
void rebound(L& live, const void* from, std::size_t bytes, const void* to) {
  if constexpr (liveness_that_rebinds<L>) {
    live.rebound(from, bytes, to);
  }
}

template <class L>
inline constexpr bool checks_across_segments = liveness_across_segments<L>;

template <class P>
inline constexpr bool has_bridges = pool_with_bridges<P>;

template <class P>
inline constexpr bool knows_bodies = policy_with_bodies<P>;

template <class P>
[[nodiscard]] std::span<const cudaGraph_t> conditional_bodies(const P& policy) {
  if constexpr (policy_with_bodies<P>) {
    return policy.conditional_bodies();
  } else {
    return {};
  }
}

} // namespace detail::contract

} // namespace graphcap
