// test/compile/liveness_checks.hpp - compile-time facts about liveness::check, checked under g++
// and nvcc (included from checks_gxx.cpp and checks_nvcc.cu).
#pragma once

#include <graphcap/graphcap.hpp>

#include <concepts>
#include <cstddef>
#include <memory>
#include <type_traits>

namespace graphcap_liveness_checks {

using namespace graphcap;

// ---- check fills the Liveness slot, and only that one -------------------------------------------
static_assert(liveness_policy<liveness::check>);
static_assert(!annotation_policy<liveness::check> && !pool_strategy<liveness::check>);
static_assert(std::is_same_v<graph_with<liveness::check>,
                             basic_graph<mode::global, pool::off, annot::off, liveness::check>>);

// ---- it costs storage only when chosen ----------------------------------------------------------
static_assert(!std::is_empty_v<liveness::check>);
static_assert(sizeof(graph_with<liveness::check>) > sizeof(lean_graph));
static_assert(sizeof(graph_with<liveness::off>) == sizeof(lean_graph));

// ---- a checked graph keeps the graph's guarantees: nothrow moves, move-only ---------------------
static_assert(std::is_nothrow_move_constructible_v<liveness::check> &&
              std::is_nothrow_move_assignable_v<liveness::check>);
static_assert(std::is_nothrow_move_constructible_v<graph_with<liveness::check>> &&
              std::is_nothrow_move_assignable_v<graph_with<liveness::check>>);
static_assert(!std::is_copy_constructible_v<graph_with<liveness::check>>);

// ---- the API the scope and the pool build on ----------------------------------------------------
static_assert(requires(liveness::check & live, const void* pointer,
                       std::weak_ptr<const void> token) {
  live.add_input(pointer);
  live.add_input(pointer, token);
  live.exclude(pointer, std::size_t{64});
  { live.input_count() } -> std::same_as<std::size_t>;
});
static_assert(requires(graph_with<liveness::check>::scope & cap, const void* pointer) {
  cap.input(pointer);
});

} // namespace graphcap_liveness_checks
