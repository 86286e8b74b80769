// graphcap/control_flow/device_loop.cuh - graphcap::device_loop: a loop whose trip count is data on
// the device, captured as a WHILE node (the structure: control_flow/device_loop.hpp). It holds the
// loop's two one-thread kernels, so only a CUDA translation unit (a .cu file nvcc compiles) can
// include it.
//
//   #include <graphcap/device_loop.cuh>
//
//   graph.capture(stream, [&](graphcap::graph::scope& cap) {
//     graphcap::device_loop(cap, 10, [&](auto& body) { step<<<1, 256, 0, body.stream()>>>(x); });
//     graphcap::device_loop(cap, trips, [&](cudaStream_t body) { ... });  // const unsigned* trips
//   });
//
// Each iteration costs a WHILE node's check and one one-thread kernel more than the body
// (docs/control-flow.md, "device_loop").
#pragma once

#include <graphcap/config.hpp>

#if !defined(__CUDACC__)
#error                                                                                             \
    "graphcap/device_loop.cuh holds the kernels of graphcap::device_loop(): include it from a .cu file that nvcc compiles (or write the counter kernel yourself and use while_() from <graphcap/control_flow.hpp>)"
#endif

#include <graphcap/control_flow/device_loop.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <utility>

namespace graphcap {
namespace detail {

// Templates, so that the kernels may be defined in every translation unit that includes this.
template <int = 0>
__global__ void device_loop_start_kernel(loop_counter counter, const unsigned* trips, unsigned n) {
  const unsigned count = trips != nullptr ? *trips : n;
  *counter.remaining = count;
  counter.flag.set(count != 0 ? 1U : 0U);
}

template <int = 0>
__global__ void device_loop_step_kernel(loop_counter counter) {
  const unsigned left = --*counter.remaining;
  counter.flag.set(left != 0 ? 1U : 0U);
}

inline void launch_device_loop_start(cudaStream_t stream, const loop_counter& counter,
                                     const unsigned* trips, unsigned n) {
  device_loop_start_kernel<><<<1, 1, 0, stream>>>(counter, trips, n);
}

inline void launch_device_loop_step(cudaStream_t stream, const loop_counter& counter) {
  device_loop_step_kernel<><<<1, 1, 0, stream>>>(counter);
}

inline constexpr device_loop_kernels cuda_device_loop_kernels{&launch_device_loop_start,
                                                              &launch_device_loop_step};

} // namespace detail

/// Captures `body` as a loop of `n` iterations on the device (a WHILE node and a counter in the
/// graph's pool); returns the counter, which kernels of the body may read (iterations left).
template <class Scope, std::integral Count, class Body>
loop_counter device_loop(Scope& cap, Count n, Body&& body) {
  using builder = detail::device_loop_builder<Scope>;
  return builder::build(cap, builder::allocate_counter(cap), nullptr, detail::trip_count(n),
                        std::forward<Body>(body), detail::cuda_device_loop_kernels);
}

/// Captures `body` as a loop of `*trips` iterations, `*trips` read on the device at every replay
/// (device memory the graph does not own, that must stay valid while the graph replays).
template <class Scope, class Body>
loop_counter device_loop(Scope& cap, const unsigned* trips, Body&& body) {
  using builder = detail::device_loop_builder<Scope>;
  return builder::build(cap, builder::allocate_counter(cap), trips, 0, std::forward<Body>(body),
                        detail::cuda_device_loop_kernels);
}

/// device_loop(cap, n, body) with the counter in `counter` (device memory for one unsigned, that
/// must stay valid while the graph replays): for graphs whose pool allocates nothing.
template <class Scope, std::integral Count, class Body>
loop_counter device_loop(Scope& cap, Count n, unsigned* counter, Body&& body) {
  return detail::device_loop_builder<Scope>::build(cap, counter, nullptr, detail::trip_count(n),
                                                   std::forward<Body>(body),
                                                   detail::cuda_device_loop_kernels);
}

/// device_loop(cap, trips, body) with the counter in `counter` (see above).
template <class Scope, class Body>
loop_counter device_loop(Scope& cap, const unsigned* trips, unsigned* counter, Body&& body) {
  return detail::device_loop_builder<Scope>::build(cap, counter, trips, 0, std::forward<Body>(body),
                                                   detail::cuda_device_loop_kernels);
}

} // namespace graphcap
