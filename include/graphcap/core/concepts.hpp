// graphcap/core/concepts.hpp - what a policy is: its kind, the lifecycle hooks every
// Pool, Annot and Liveness policy offers, and the four slot concepts of basic_graph.
//
//   basic_graph<capture_mode Mode, pool_strategy Pool, annotation_policy Annot,
//               liveness_policy Liveness>
//
// A type in the wrong slot fails with that slot's concept name; a policy whose hook could throw
// where the graph cannot let it fails with `lifecycle_hooks`.
//
// ## The lifecycle hooks (concept `lifecycle_hooks`)
//
// Minimal complete definition: derive from detail::no_hooks<Category> (every hook empty) and hide
// the hooks the policy needs. basic_graph calls each hook of the three stateful kinds in the
// order Pool, Annot, Liveness, at these points:
//
//   hook                         when                                   may throw?
//   before_capture(stream)       before cudaStreamBeginCapture          yes: nothing has begun;
//                                                                       every policy then gets
//                                                                       on_capture_abort()
//   after_capture_begin(stream)  the capture runs                       yes: the capture is
//                                                                       ended and discarded first
//   before_capture_end(stream)   the capture still runs (last work)     yes: likewise
//   after_capture_end(graph)     the template exists                    yes: the graph is reset
//   after_instantiate(exec)      a new (or updated) executable exists   yes: the graph is reset
//   before_replay(stream)        before every cudaGraphLaunch           yes: nothing is launched
//   on_capture_abort()           a capture failed or was abandoned      no (noexcept required)
//   on_reset()                   reset(), destruction, a failure after  no (noexcept required)
//                                the capture ended
//
// Laws (what a policy may rely on, and must keep):
//  1. Pairing: every before_capture is followed by exactly one of on_capture_abort (the capture
//     failed, or a hook threw) or after_capture_end (it succeeded); on_reset may follow either.
//  2. No stream is capturing when on_capture_abort, on_reset or after_capture_end run.
//  3. on_capture_abort and on_reset undo everything since before_capture and leave the policy
//     as after default construction, except for what it caches across captures (a pool's slabs,
//     resolved driver functions). They are idempotent.
//  4. A moved-from policy is only destroyed or assigned to.
//  5. The policy of a kind that is "off" is an empty type whose hooks are empty, constexpr and
//     noexcept: it costs no byte and no call.
//  6. before_replay is the only hook on the replay path; it must not allocate on success.
// test/runtime/policy_laws.cpp drives every shipped policy through these on the test double.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {
namespace detail {

struct mode_category {};
struct pool_category {};
struct annot_category {};
struct liveness_category {};

template <class P>
concept has_policy_category = requires {
  typename P::policy_category;
};

template <class P, class Category>
concept policy_of = has_policy_category<P> && std::same_as<typename P::policy_category, Category>;

} // namespace detail

/// The hooks a Pool, Annot or Liveness policy offers (see the table above). The two called from
/// noexcept paths of the graph must be noexcept, and so must moving the policy.
template <class P>
concept lifecycle_hooks = std::is_nothrow_move_constructible_v<P> &&
    std::is_nothrow_move_assignable_v<P> && std::is_nothrow_destructible_v<P> &&
    requires(P& policy, cudaStream_t stream, cudaGraph_t graph, cudaGraphExec_t exec) {
  policy.before_capture(stream);
  policy.after_capture_begin(stream);
  policy.before_capture_end(stream);
  policy.after_capture_end(graph);
  policy.after_instantiate(exec);
  policy.before_replay(stream);
  { policy.on_capture_abort() }
  noexcept;
  { policy.on_reset() }
  noexcept;
};

/// A Mode policy: a stateless type naming a cudaStreamCaptureMode (graphcap::mode).
template <class M>
concept capture_mode =
    detail::policy_of<M, detail::mode_category> && std::is_empty_v<M> && requires {
  { M::value } -> std::convertible_to<cudaStreamCaptureMode>;
};

/// A Pool policy (graphcap::pool): the hooks, whether it can allocate during a capture, whether
/// it has a shareable handle, and the flags it needs passed to cudaGraphInstantiateWithFlags.
template <class P>
concept pool_strategy =
    detail::policy_of<P, detail::pool_category> && lifecycle_hooks<P> && requires {
  { P::can_allocate } -> std::convertible_to<bool>;
  { P::has_handle } -> std::convertible_to<bool>;
  { P::instantiate_flags } -> std::convertible_to<unsigned long long>;
};

/// An Annot policy (graphcap::annot): the hooks plus `mark`, which opens a tagging scope on a
/// capture stream and returns its RAII marker.
template <class A>
concept annotation_policy = detail::policy_of<A, detail::annot_category> && lifecycle_hooks<A> &&
    requires(A& annot, cudaStream_t stream, std::string_view name,
             std::initializer_list<annotation_entry> entries) {
  annot.mark(stream, name);
  annot.mark(stream, entries);
};

/// A Liveness policy (graphcap::liveness): the hooks, `add_input` for inputs the graph reaches
/// indirectly (with or without a liveness token), and `exclude` for internal memory (a slab).
template <class L>
concept liveness_policy = detail::policy_of<L, detail::liveness_category> && lifecycle_hooks<L> &&
    requires(L& live, const void* pointer, std::weak_ptr<const void> token, std::size_t bytes) {
  live.add_input(pointer);
  live.add_input(pointer, token);
  live.exclude(pointer, bytes);
};

} // namespace graphcap
