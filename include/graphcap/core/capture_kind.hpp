// graphcap/core/capture_kind.hpp - what a capture scope's end() does: the kinds of capture. A
// kind is a type with end(lifecycle, stream), a noexcept abandon(lifecycle, stream), run by
// basic_scope's end() and destructor, and a static check_allocate<Pool>() that may refuse a pool
// at compile time; each makes the executable graph (or not) its own way, through the
// lifecycle's steps (core/detail/graph_lifecycle.hpp, whose friends they are). A wing may add a
// kind of its own and open a scope of it with detail::scope_services::run_nested.
#pragma once

#include <graphcap/core/update.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

namespace graphcap {

/// What a scope's end() does with the capture. Each kind ends and abandons its capture itself,
/// through the graph's lifecycle (a template on it: the kinds do not know the graph's type).
namespace capture_kind {
/// A first capture: end() instantiates the template (or keeps it, with keep_graph).
struct fresh {
  /// Every pool may serve an allocation in this capture (a kind that refuses one static_asserts).
  template <class Pool>
  static constexpr void check_allocate() noexcept {}
  /// Ends the capture and instantiates the template (unless keep_graph keeps it).
  template <class Lifecycle>
  void end(Lifecycle& graph, cudaStream_t stream) {
    graph.end_capture(stream);
    graph.instantiate_unless_kept();
  }
  /// Ends and discards the capture; the graph is left empty.
  template <class Lifecycle>
  void abandon(Lifecycle& graph, cudaStream_t stream) noexcept {
    graph.abandon_capture(stream);
  }
};
/// A recapture: end() updates the previous executable graph in place when CUDA allows, and
/// instantiates anew otherwise; update() says which.
struct update {
  detail::exec_handle previous; ///< the executable graph to update, until end()
  update_result result;         ///< what end() did

  /// Every pool may serve an allocation in this capture (a kind that refuses one static_asserts).
  template <class Pool>
  static constexpr void check_allocate() noexcept {}

  /// Ends the capture and updates the previous executable graph (or instantiates anew).
  template <class Lifecycle>
  void end(Lifecycle& graph, cudaStream_t stream) {
    graph.end_capture(stream);
    graph.update_executable(previous, result);
  }
  /// The previous executable graph goes with the kind: the graph is left empty.
  template <class Lifecycle>
  void abandon(Lifecycle& graph, cudaStream_t stream) noexcept {
    graph.abandon_capture(stream);
  }
};
} // namespace capture_kind

} // namespace graphcap
