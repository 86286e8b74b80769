// graphcap/policies/liveness.hpp - the Liveness policy: are the graph's inputs still alive?
//
// A graph bakes in the addresses it read at capture. A liveness policy learns the graph's
// external inputs at capture end (and from `scope::input`) and, before each replay, refuses to
// launch if one of them was freed. liveness::off stores nothing and checks nothing.
#pragma once

#include <graphcap/detail/no_hooks.hpp>
#include <graphcap/detail/policy_category.hpp>

#include <concepts>
#include <type_traits>

namespace graphcap {

/// A Liveness policy: lifecycle hooks plus `add_input`, for inputs the graph reaches indirectly.
template <class L>
concept liveness_policy = detail::has_policy_category<L> &&
    std::same_as<typename L::policy_category, detail::liveness_category> &&
    std::is_nothrow_move_constructible_v<L> && std::is_nothrow_move_assignable_v<L> &&
    requires(L& live, cudaStream_t stream, cudaGraph_t graph, cudaGraphExec_t exec,
             const void* pointer) {
  live.add_input(pointer);
  live.before_capture(stream);
  live.after_capture_begin(stream);
  live.before_capture_end(stream);
  live.after_capture_end(graph);
  live.on_capture_abort();
  live.after_instantiate(exec);
  live.before_replay(stream);
  live.on_reset();
};

namespace liveness {

/// Liveness checking disabled: no storage, no call before replay.
struct off : detail::no_hooks<detail::liveness_category> {
  constexpr void add_input(const void* /*pointer*/) noexcept {}
};

} // namespace liveness
} // namespace graphcap
