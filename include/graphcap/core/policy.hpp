// graphcap/core/policy.hpp - the one contract between the core, the wings and their policies:
// what a policy is (its kind), the lifecycle hooks every Pool, Annot and Liveness policy offers
// (required), the hooks some offer (optional, each with the default a policy without it gets),
// and the four slot concepts of basic_graph.
//
//   basic_graph<capture_mode Mode, pool_strategy Pool, annotation_policy Annot,
//               liveness_policy Liveness>
//
// A type in the wrong slot fails with that slot's concept name; a policy whose hook could throw
// where the graph cannot let it fails with `lifecycle_hooks`.
//
// ## The lifecycle hooks (concept `lifecycle_hooks`)
//
// Minimal complete definition: derive from policy_base<Kind> (every hook empty; Kind one of
// policy_kind::pool, ::annot, ::liveness) and hide the hooks the policy needs. basic_graph calls
// each hook of the three stateful kinds in the order Pool, Annot, Liveness (before_replay alone
// in the order Liveness, Pool, Annot: a refused replay must not have touched the others), at
// these points:
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
// test/core/policy_laws.double.cpp drives every shipped policy through these on the test double,
// and a policy written with this header's public names only.
//
// ## Optional hooks (named capabilities; each shipped model asserts those it offers)
//
// The core and the wings call these only through detail::contract (below), which gives a policy
// without the hook the default written next to it. No other header probes a policy with
// `requires`: a hook is looked for here, or in core/wing_contract.hpp, under its one name. A
// model asserts every capability it means to offer next to its definition
// (`static_assert(pool_that_recaptures<private_pool>)`), so a misspelt hook fails there instead
// of silently reading as "not offered". The capabilities the core calls itself are here; those
// only a wing calls (conditional bodies, rebinding, pictures) are in core/wing_contract.hpp, in
// the same table style.
//
//   capability                    hook(s)                                default
//   policy_that_checks_captures   check_capture() const: throws to       every capture allowed
//                                 refuse a capture before anything runs
//   pool_that_recaptures          on_recapture() noexcept: give blocks   on_reset()
//                                 back in order, keep the slabs
//   pool_with_slabs               for_each_slab(f) const: f(base, bytes) no slabs (liveness::check
//                                 for each slab                          excludes nothing)
//   annotation_with_records       annotations() const                    annotations() refused
//   liveness_with_tokens<Token>   add_input(pointer, token): an input    scope::input(pointer,
//                                 whose life `token` reports (liveness:: token) refused at
//                                 check: a std::weak_ptr<const void>)    compile time
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {

/// The four kinds of policy, one tag each: a policy names its kind as `policy_category`
/// (policy_base<Kind> does it), and graph_with<P...> sorts policies by it.
namespace policy_kind {
struct mode {};     ///< a capture mode (graphcap::mode)
struct pool {};     ///< where memory allocated during a capture lives (graphcap::pool)
struct annot {};    ///< named scopes that tag nodes (graphcap::annot)
struct liveness {}; ///< refusing a replay whose inputs were freed (graphcap::liveness)
} // namespace policy_kind

/// The base of a Pool, Annot or Liveness policy: every required hook, empty, constexpr and
/// noexcept. Derive and hide the hooks the policy needs (the table above says when each runs).
/// A template of the kind, so that the three policy members of basic_graph never hold two base
/// subobjects of one type: those would need distinct addresses, and the [[no_unique_address]]
/// members could no longer all overlap (the lean graph would grow).
template <class Kind>
struct policy_base {
  using policy_category = Kind; ///< which slot of basic_graph the policy fills

  /// Before cudaStreamBeginCapture: set up what the capture needs (e.g. pool routing).
  constexpr void before_capture(cudaStream_t /*stream*/) noexcept {}
  /// Right after cudaStreamBeginCapture succeeded.
  constexpr void after_capture_begin(cudaStream_t /*stream*/) noexcept {}
  /// Before cudaStreamEndCapture, while the capture is still live (resolve annotations).
  constexpr void before_capture_end(cudaStream_t /*stream*/) noexcept {}
  /// The capture ended successfully and produced `graph` (scan the template for inputs).
  constexpr void after_capture_end(cudaGraph_t /*graph*/) noexcept {}
  /// The capture failed or was discarded: undo everything done since before_capture.
  constexpr void on_capture_abort() noexcept {}
  /// A new executable graph was instantiated (re-key node ids).
  constexpr void after_instantiate(cudaGraphExec_t /*exec*/) noexcept {}
  /// Just before cudaGraphLaunch; may throw to prevent the launch.
  constexpr void before_replay(cudaStream_t /*stream*/) noexcept {}
  /// The graph was reset or destroyed; never throws.
  constexpr void on_reset() noexcept {}
};

namespace detail {

// The kinds' old spellings, for graphcap's own code and policies written against 0.2.
using mode_category = policy_kind::mode;
using pool_category = policy_kind::pool;
using annot_category = policy_kind::annot;
using liveness_category = policy_kind::liveness;
template <class Category>
using no_hooks = policy_base<Category>;

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
/// indirectly, and `exclude` for internal memory (a slab). Inputs with a liveness token are the
/// optional capability liveness_with_tokens.
template <class L>
concept liveness_policy = detail::policy_of<L, detail::liveness_category> && lifecycle_hooks<L> &&
    requires(L& live, const void* pointer, std::size_t bytes) {
  live.add_input(pointer);
  live.exclude(pointer, bytes);
};

// ---- optional hooks: named capabilities (the table above) ----------------------------------

/// Any policy: check_capture() throws (a state_error saying what to do) to refuse a capture now
/// (a sleeping pool). Runs before a capture's first hook and before a recapture releases
/// anything: no hook follows a refusal, and the graph keeps its executable, template, blocks.
template <class P>
concept policy_that_checks_captures = requires(const P& policy) {
  policy.check_capture();
};

/// Pool: on_recapture() gives every block back in allocation order and keeps the slabs, so that
/// a recapture's allocations get the same addresses (and the executable can be updated).
template <class P>
concept pool_that_recaptures = requires(P& pool) {
  { pool.on_recapture() }
  noexcept;
};
/// Pool: for_each_slab(f) calls f(base, bytes) for each slab of device memory it holds (what
/// liveness::check excludes: the graph's own memory is never an external input).
template <class P>
concept pool_with_slabs = requires(const P& pool, void (*visit)(const void*, std::size_t)) {
  pool.for_each_slab(visit);
};
/// Annot: annotations() lists the annotated nodes of the last capture.
template <class A>
concept annotation_with_records = requires(const A& annot) {
  annot.annotations();
};

/// Liveness: add_input(pointer, token) declares an input whose life the allocator reports
/// through `token` (liveness::check takes a std::weak_ptr<const void>; liveness::off any token).
/// A template on the token's type, so that the contract names no std::weak_ptr: `<memory>` costs
/// a .cu file more to parse than the rest of the lean core (docs/benchmarks.md, compile time).
template <class L, class Token>
concept liveness_with_tokens = requires(L& live, const void* pointer, Token token) {
  live.add_input(pointer, static_cast<Token&&>(token));
};

namespace detail::contract {

// The one place the core and the wings call optional hooks (the default where one is lacking).

template <class P>
void check_capture(const P& policy) {
  if constexpr (policy_that_checks_captures<P>) {
    policy.check_capture();
  }
}

template <class P>
void recapture(P& pool) noexcept {
  if constexpr (pool_that_recaptures<P>) {
    pool.on_recapture();
  } else {
    pool.on_reset();
  }
}

template <class P, class F>
void for_each_slab(const P& pool, F&& visit) {
  if constexpr (pool_with_slabs<P>) {
    pool.for_each_slab(std::forward<F>(visit));
  }
}

} // namespace detail::contract

/// The graph the four concepts constrain, declared with them (defined in core/basic_graph.hpp).
template <capture_mode Mode, pool_strategy Pool, annotation_policy Annot, liveness_policy Liveness>
class basic_graph;

} // namespace graphcap
