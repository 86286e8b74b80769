// graphcap/core/detail/hooks.hpp - the lifecycle hooks every policy offers, all empty: the base a
// policy derives from and hides the hooks it needs (core/concepts.hpp says when each runs).
//
// An "off" policy hides none, so every call below is an empty inline function of an empty type
// and compiles to nothing. The base is a template of the category so that the three policy
// members of basic_graph never hold two base subobjects of one type: those would need distinct
// addresses, and the [[no_unique_address]] members could no longer all overlap (the graph would
// grow).
#pragma once

#include <graphcap/core/concepts.hpp>

#include <cuda_runtime_api.h>

namespace graphcap::detail {

template <class Category>
struct no_hooks {
  using policy_category = Category;

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

} // namespace graphcap::detail
