// graphcap/control_flow/device_loop.hpp - the structure of device_loop(): a loop whose trip count
// is data on the device, captured as a WHILE node. Users include <graphcap/device_loop.cuh> (from a
// .cu file: it holds the loop's two tiny kernels) and call graphcap::device_loop; this header is
// the part that needs no nvcc.
//
//   #include <graphcap/device_loop.cuh>
//
//   graph.capture(stream, [&](graphcap::graph::scope& cap) {
//     graphcap::device_loop(cap, 10, [&](auto& body) { step<<<1, 256, 0, body.stream()>>>(x); });
//     graphcap::device_loop(cap, trips_on_device, [&](cudaStream_t body) { ... });  // const
//     unsigned*
//   });
//
// What it captures, on the scope's stream: a "start" kernel that copies the trip count (the
// fixed n, or *trips read at every replay) into a counter and sets the loop's condition to
// whether it is non-zero; then a WHILE node on that condition whose body is the user's body
// followed by a "step" kernel that decrements the counter and clears the condition at zero. The
// counter is an unsigned in the graph's pool (a fixed address, the graph's until reset), or one
// the caller passes for a graph without an allocating pool. A trip count of 0 runs no iteration.
// The lean core never includes this header.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/conditional.hpp>
#include <graphcap/control_flow/detail/conditional_rules.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace graphcap {

/// What a device_loop() loop's kernels share: the counter (iterations left, the current one
/// included, while the body runs) and the loop's condition.
struct loop_counter {
  unsigned* remaining = nullptr; ///< device memory: trips left (n, then n - 1, ... , 1 in a body)
  condition flag;                ///< the WHILE node's condition
};

/// The 0.2 name of device_loop(), for one release: every form of it.
template <class Scope, class... Arguments>
[[deprecated("graphcap: repeat() is spelled device_loop() since 0.3 (a loop on the device; "
             "replay_loop is the host's)")]] loop_counter
repeat(Scope& cap, Arguments&&... arguments) {
  return device_loop(cap, std::forward<Arguments>(arguments)...); // (from device_loop.cuh)
}

namespace detail {

/// How a device_loop() loop launches its two kernels (device_loop.cuh gives the real ones; a test
/// double, which runs no kernel, may give others).
struct device_loop_kernels {
  /// Before the loop: *remaining = trips ? *trips : n; flag = *remaining != 0.
  void (*start)(cudaStream_t stream, const loop_counter& counter, const unsigned* trips,
                unsigned n) = nullptr;
  /// At the end of each iteration: flag = --*remaining != 0.
  void (*step)(cudaStream_t stream, const loop_counter& counter) = nullptr;
};

/// A host trip count as the loop's unsigned; std::invalid_argument if it does not fit.
template <std::integral Count>
unsigned trip_count(Count n) {
  if (!std::in_range<unsigned>(n)) [[unlikely]] {
    throw std::invalid_argument("graphcap: device_loop() was given a trip count of " +
                                std::to_string(n) + ", which is negative or over UINT_MAX");
  }
  return static_cast<unsigned>(n);
}

/// Builds a device_loop() loop in the capture of `Scope`.
template <class Scope>
struct device_loop_builder {
  /// Captures the loop (see the top of this file) and returns its counter. `counter`: where the
  /// count lives (allocate_counter(), or the caller's). `trips`: the device-side trip count, or
  /// nullptr for `n`.
  template <class Body>
  static loop_counter build(Scope& cap, unsigned* counter, const unsigned* trips, unsigned n,
                            Body&& body, const device_loop_kernels& kernels) {
    static_assert(std::is_invocable_v<Body, typename control_flow::builder<Scope>::body_scope&> ||
                      std::is_invocable_v<Body, cudaStream_t> || std::is_invocable_v<Body>,
                  "graphcap: a device_loop() body must be a callable taking the body's scope "
                  "(auto&), its stream (cudaStream_t), or nothing");
    loop_counter loop;
    if (counter == nullptr) [[unlikely]] {
      throw std::invalid_argument("graphcap: device_loop() was given a null counter: pass device "
                                  "memory for one unsigned, or leave it out on a graph with a "
                                  "pool");
    }
    loop.remaining = counter;
    loop.flag = graphcap::make_condition(
        cap, 0, reset_each_launch); // the start kernel sets it every launch
    kernels.start(cap.stream(), loop, trips, n);
    control_flow::check_in_capture(cudaGetLastError(), "device_loop(): the start kernel's launch");
    graphcap::while_(cap, loop.flag, [&](auto& body_scope) {
      invoke_work(body_scope, std::forward<Body>(body));
      kernels.step(body_scope.stream(), loop); // after the body's work on its stream
      control_flow::check_in_capture(cudaGetLastError(), "device_loop(): the step kernel's launch");
    });
    return loop;
  }

  /// A counter from the graph's pool (a compile error where its pool allocates nothing).
  static unsigned* allocate_counter(Scope& cap) {
    using pool_type = typename Scope::graph_type::pool_type;
    static_assert(pool_type::can_allocate,
                  "graphcap: device_loop() keeps its counter in the graph's pool, and this graph's "
                  "pool policy allocates nothing: use a graph with a pool (graphcap::graph), or "
                  "pass device memory for the counter: device_loop(cap, n, counter, body)");
    return cap.template allocate<unsigned>(1);
  }
};

} // namespace detail
} // namespace graphcap
