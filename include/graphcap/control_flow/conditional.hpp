// graphcap/control_flow/conditional.hpp - decisions on the device inside a capture: conditions and
// the conditional nodes if_, if_else, switch_ and while_ (CUDA conditional nodes, captured).
//
//   #include <graphcap/control_flow.hpp>
//
//   graph.capture(stream, [&](auto& cap) {
//     graphcap::condition more = graphcap::make_condition(cap, 1); // 1: loop at once
//     graphcap::while_(cap, more, [&](auto& body) {  // captured once, into the node's body
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

#include <graphcap/control_flow/condition.hpp>
#include <graphcap/control_flow/detail/conditional_builder.hpp>
#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/scope.hpp>
#include <graphcap/fwd.hpp>

#include <utility>

namespace graphcap {
/// A condition owned by the graph `cap` captures into, for the conditional nodes below; device
/// code sets it (`flag.set(v)`). It is `initial` at the start of every launch; `initial`
/// defaults to 0, so `while_(cap, make_condition(cap), ...)` runs no iteration unless a kernel
/// before it sets the condition. With graphcap::keep_across_launches `initial` is not used: the
/// value persists between launches, and device code must set it before a node reads it.
/// \throws std::invalid_argument for a negative `initial` or one over UINT_MAX (nothing made);
/// cuda_error if CUDA refuses the handle; state_error if `cap` has ended.
/// An integer `initial`; any other type does not compile.
template <capture_scope Scope, class Initial = unsigned>
[[nodiscard]] condition make_condition(Scope& cap, Initial initial = 0U,
                                       condition_reset reset = condition_reset::each_launch) {
  return detail::control_flow::builder<Scope>::condition(cap, initial, reset);
}

/// Runs `body` (captured now, into the node's body) when `flag` is non-zero at run time.
/// \throws state_error if `flag` belongs to another graph or capture, or already serves a node;
/// capture_error if the body breaks CUDA's body rules (the whole capture then fails).
/// \post later work on `cap`'s stream runs after the node.
template <capture_scope Scope, class Body>
void if_(Scope& cap, const condition& flag, Body&& body) {
  detail::control_flow::builder<Scope>::if_(cap, flag, std::forward<Body>(body));
}

/// Runs `then_body` when `flag` is non-zero, `else_body` otherwise (CUDA 12.8+).
/// \throws as if_(); error if the driver is older than CUDA 12.8.
template <capture_scope Scope, class Then, class Else>
void if_else(Scope& cap, const condition& flag, Then&& then_body, Else&& else_body) {
  detail::control_flow::builder<Scope>::if_else(cap, flag, std::forward<Then>(then_body),
                                                std::forward<Else>(else_body));
}

/// Runs body n when `flag` is n, none when it is at least the number of bodies (CUDA 12.8+).
/// \throws as if_else().
template <capture_scope Scope, class... Bodies>
void switch_(Scope& cap, const condition& flag, Bodies&&... bodies) {
  detail::control_flow::builder<Scope>::switch_(cap, flag, std::forward<Bodies>(bodies)...);
}

/// Runs `body` again and again while `flag` is non-zero, checked before each iteration.
/// \throws as if_().
template <capture_scope Scope, class Body>
void while_(Scope& cap, const condition& flag, Body&& body) {
  detail::control_flow::builder<Scope>::while_(cap, flag, std::forward<Body>(body));
}

} // namespace graphcap
