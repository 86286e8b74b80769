// graphcap/policies/pool.hpp - the Pool policy: where memory allocated during a capture lives.
//
// A pool strategy decides what `scope::allocate<T>(n)` hands out while a capture runs and keeps
// that memory at a fixed address for every replay. pool::none has no allocation API at all; the
// allocating strategies (private, shared, user pool, CUDA graph memory nodes) come with the pool
// feature and plug in here.
#pragma once

#include <graphcap/detail/no_hooks.hpp>
#include <graphcap/detail/policy_category.hpp>

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace graphcap {

/// A Pool policy: lifecycle hooks, a flag saying whether it can allocate, and the flags it needs
/// passed to cudaGraphInstantiateWithFlags.
template <class P>
concept pool_strategy = detail::has_policy_category<P> &&
    std::same_as<typename P::policy_category, detail::pool_category> &&
    std::is_nothrow_move_constructible_v<P> && std::is_nothrow_move_assignable_v<P> &&
    requires(P& pool, cudaStream_t stream, cudaGraph_t graph, cudaGraphExec_t exec) {
  { P::can_allocate } -> std::convertible_to<bool>;
  { P::instantiate_flags } -> std::convertible_to<unsigned long long>;
  pool.before_capture(stream);
  pool.after_capture_begin(stream);
  pool.before_capture_end(stream);
  pool.after_capture_end(graph);
  pool.on_capture_abort();
  pool.after_instantiate(exec);
  pool.before_replay(stream);
  pool.on_reset();
};

namespace pool {

/// No memory is allocated during capture: the graph reads and writes buffers you allocated
/// beforehand. Costs nothing; `allocate` and `pool()` do not exist on such a graph.
struct none : detail::no_hooks<detail::pool_category> {
  static constexpr bool can_allocate = false;
  static constexpr unsigned long long instantiate_flags = 0;
};

} // namespace pool
} // namespace graphcap
