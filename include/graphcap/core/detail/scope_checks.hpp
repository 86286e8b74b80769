// graphcap/core/detail/scope_checks.hpp - the compile errors of a scope's calls: a pool that cannot
// serve allocate() or make_buffer(), control flow without its include, and capture work that
// capture() cannot call (work that takes the scope of another graph type, `graph::scope&` given
// to a lean_graph, gets an error that names both graph types). Each is one static_assert, and
// the callers compile nothing after it that the compiler would report again.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/fwd.hpp>

#include <type_traits>

namespace graphcap::detail {

template <class>
inline constexpr bool never = false;

/// The pools as every diagnostic that asks for one spells them: the slab pools (shareable,
/// allowed in a conditional body), and every pool that allocates.
#define GRAPHCAP_SLAB_POOLS                                                                        \
  "pool::private_pool, pool::shared, pool::user, pool::sleepable or pool::sleepable_shared"
#define GRAPHCAP_ALLOCATING_POOLS                                                                  \
  "pool::private_pool, pool::shared, pool::user, pool::sleepable, pool::sleepable_shared or "      \
  "pool::graph_memory_nodes, "                                                                     \
  "not pool::off"

/// The pool checks of a scope's allocating calls (and of the allocators over a scope), in one
/// place. Deallocating = true: the text names deallocate().
template <class Pool, bool Deallocating = false>
constexpr void require_allocating_pool() noexcept {
  if constexpr (Deallocating) {
    static_assert(Pool::can_allocate, "graphcap: deallocate() needs a graph whose pool policy "
                                      "allocates: use " GRAPHCAP_ALLOCATING_POOLS);
  } else {
    static_assert(Pool::can_allocate, "graphcap: allocate() needs a graph whose pool policy "
                                      "allocates: use " GRAPHCAP_ALLOCATING_POOLS);
  }
}
template <class Pool>
constexpr void require_slab_pool() noexcept {
  static_assert(Pool::has_handle, "graphcap: make_buffer() needs a graph whose pool keeps blocks "
                                  "in slabs: use " GRAPHCAP_SLAB_POOLS " (pool::graph_memory_nodes "
                                  "memory belongs to its graph; pool::off allocates nothing)");
}

/// The member spellings the core keeps for one release (deprecated in 0.5, removed in 0.6): each
/// calls the free function of the same name that a wing declares in namespace graphcap, found by
/// argument-dependent lookup on the scope (the core names no wing). Without that declaration,
/// or with arguments it does not take, one readable error and no other.
namespace spelling {
// NOLINTBEGIN(cppcoreguidelines-missing-std-forward): forwarded inside the requires-expressions
#define GRAPHCAP_DETAIL_SPELLING(member, free_function)                                            \
  template <class Scope, class... Arguments>                                                       \
  decltype(auto) call_##member(Scope& cap, Arguments&&... arguments) {                             \
    constexpr bool declared = requires {                                                           \
      free_function(cap, std::forward<Arguments>(arguments)...);                                   \
    };                                                                                             \
    static_assert(declared, "graphcap: cap." #member "(...) needs #include "                       \
                            "<graphcap/control_flow.hpp>, where graphcap::" #free_function         \
                            "(cap, ...) is declared (and takes these arguments)");                 \
    if constexpr (declared) {                                                                      \
      return free_function(cap, std::forward<Arguments>(arguments)...);                            \
    }                                                                                              \
  }
GRAPHCAP_DETAIL_SPELLING(condition, make_condition)
GRAPHCAP_DETAIL_SPELLING(if_, if_)
GRAPHCAP_DETAIL_SPELLING(if_else, if_else)
GRAPHCAP_DETAIL_SPELLING(switch_, switch_)
GRAPHCAP_DETAIL_SPELLING(while_, while_)
#undef GRAPHCAP_DETAIL_SPELLING
// NOLINTEND(cppcoreguidelines-missing-std-forward)
} // namespace spelling

/// The type of the one parameter of a callable's call operator, or of a function (void where
/// there is not exactly one, or the call operator is a template or overloaded).
template <class F>
struct sole_parameter {
  using type = void;
};
template <class R, class A>
struct sole_parameter<R(A)> {
  using type = A;
};
template <class R, class A>
struct sole_parameter<R(A) noexcept> {
  using type = A;
};
template <class R, class A>
struct sole_parameter<R (*)(A)> : sole_parameter<R(A)> {};
template <class R, class A>
struct sole_parameter<R (*)(A) noexcept> : sole_parameter<R(A)> {};
template <class R, class C, class A>
struct sole_parameter<R (C::*)(A)> : sole_parameter<R(A)> {};
template <class R, class C, class A>
struct sole_parameter<R (C::*)(A) const> : sole_parameter<R(A)> {};
template <class R, class C, class A>
struct sole_parameter<R (C::*)(A) noexcept> : sole_parameter<R(A)> {};
template <class R, class C, class A>
struct sole_parameter<R (C::*)(A) const noexcept> : sole_parameter<R(A)> {};

template <class Work, class = void>
struct work_parameter : sole_parameter<Work> {};
template <class Work>
struct work_parameter<Work, std::void_t<decltype(&Work::operator())>>
    : sole_parameter<decltype(&Work::operator())> {};

/// The graph whose scope `T` is (void for any other type).
template <class T>
struct graph_of_scope {
  using type = void;
};
template <class Graph, class Kind>
struct graph_of_scope<basic_scope<Graph, Kind>> {
  using type = Graph;
};

/// The graph whose scope `Work` takes by its one parameter, or void.
template <class Work>
using scope_graph_of_work = typename graph_of_scope<
    std::remove_cvref_t<typename work_parameter<std::remove_cvref_t<Work>>::type>>::type;

/// The error for work that takes another graph type's scope: the compiler prints this template
/// with its arguments, the graph being captured first, then the graph whose scope the work takes.
template <class CapturedGraph, class GraphOfTheWorksScope>
struct capture_work_takes_the_scope_of_another_graph {
  static_assert(never<CapturedGraph>,
                "graphcap: capture(work): the work takes the scope of another graph type (the "
                "two are this template's arguments: the graph being captured, then the graph "
                "whose scope the work takes); take auto&, or the captured graph's own scope "
                "(decltype(graph)::scope&)");
  static constexpr bool refused = true;
};

/// Fails the compilation of capture(work) for work it cannot call, with one error.
template <class Scope, class Work>
constexpr void refuse_work() {
  using other = scope_graph_of_work<Work>;
  if constexpr (!std::is_void_v<other> && !std::is_same_v<other, typename Scope::graph_type>) {
    static_assert(
        capture_work_takes_the_scope_of_another_graph<typename Scope::graph_type, other>::refused);
  } else {
    static_assert(never<Work>,
                  "graphcap: capture(work) needs a callable taking the capture scope (scope& "
                  "or auto&), the capture stream (cudaStream_t), or nothing");
  }
}

} // namespace graphcap::detail
