// graphcap/control_flow/condition.hpp - what a conditional node decides on (graphcap::condition,
// set from device code) and the capture kind of its bodies (capture_kind::body): the body's
// scope is graphcap::body_scope<Graph>. <graphcap/control_flow/conditional.hpp> adds the nodes.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/detail/body_capture_end.hpp>
#include <graphcap/control_flow/detail/body_streams.hpp>
#include <graphcap/control_flow/detail/conditional_rules.hpp>
#include <graphcap/core/detail/graph_lifecycle.hpp>
#include <graphcap/core/detail/scope_checks.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

namespace graphcap {

namespace detail::control_flow {
template <class Scope>
struct builder;
} // namespace detail::control_flow

/// A condition owned by a graph: what its conditional nodes decide on. Trivially copyable, so it
/// is passed to kernels by value; device code sets it with set() (cudaGraphSetConditional).
class condition {
public:
  /// No condition (a default-constructed value is not usable by a conditional node).
  GRAPHCAP_HOST_DEVICE constexpr condition() noexcept {} // NOLINT: = default is not __device__

  /// The CUDA handle, for code that calls cudaGraphSetConditional itself.
  [[nodiscard]] GRAPHCAP_HOST_DEVICE constexpr cudaGraphConditionalHandle handle() const noexcept {
    return handle_;
  }
  /// The graph it belongs to (the graph, or the conditional body, being captured at creation).
  [[nodiscard]] GRAPHCAP_HOST_DEVICE constexpr cudaGraph_t graph() const noexcept { return graph_; }

#if defined(__CUDACC__)
  /// Sets the condition's value, from device code (one thread: racing sets are undefined).
  __device__ void set(unsigned value) const {
    cudaGraphSetConditional(handle_, value);
  }
#endif

private:
  template <class>
  friend struct detail::control_flow::builder;
  constexpr condition(cudaGraphConditionalHandle handle, cudaGraph_t graph,
                      unsigned long long capture) noexcept
      : handle_(handle), graph_(graph), capture_(capture) {}

  cudaGraphConditionalHandle handle_ = 0;
  cudaGraph_t graph_ = nullptr;
  unsigned long long capture_ = 0; // the capture it was made in: graph handles are reused
};

#if defined(__CUDACC__)
/// Sets `flag` to `value` from device code: `graphcap::set(flag, 0)`.
__device__ inline void set(const condition& flag, unsigned value) {
  flag.set(value);
}
#endif

namespace capture_kind {

/// A conditional node's body: captured into the body graph on a stream graphcap owns; its end()
/// checks CUDA's body rules and ends only the body's capture, and its abandonment leaves the
/// parent capture to the parent's scope.
struct body : detail::core_extension {
  /// A Pool policy that allocates through graph memory nodes cannot serve a body: CUDA allows
  /// no memory node there.
  template <class Pool>
  static constexpr void check_allocate() noexcept {
    static_assert(!detail::contract::allocates_graph_nodes<Pool>,
                  "graphcap: allocate() in a conditional body needs a slab pool: CUDA allows no "
                  "memory node in a body, and pool::graph_memory_nodes allocates with one; "
                  "use " GRAPHCAP_SLAB_POOLS ", or allocate outside the body");
  }

  cudaGraph_t graph = nullptr;                   ///< the body graph CUDA made for the node
  const char* construct = "";                    ///< "while_", "if_", ... for messages
  unsigned index = 0;                            ///< which body of the node
  detail::control_flow::body_stream_lease lease; ///< the stream it is captured on
  cudaStream_t parent = nullptr;                 ///< the stream of the scope that added the node
  cudaStream_t root = nullptr;                   ///< the stream of the outermost capture

  /// Ends the body's capture and checks what it captured (the parent's capture goes on).
  /// A body that left work forked to another stream unjoined, or whose capture was invalidated,
  /// is a capture_error; CUDA keeps the body graph either way
  /// (detail::control_flow::end_body_capture).
  template <class Lifecycle>
  void end(Lifecycle& lifecycle, cudaStream_t stream) {
    hand_over(lifecycle, stream, parent);
    switch (detail::control_flow::end_body_capture(stream, graph, parent, root)) {
    case detail::control_flow::body_capture_end::ended:
      break;
    case detail::control_flow::body_capture_end::joined_work:
      detail::control_flow::refuse_unjoined_body(construct, index);
    case detail::control_flow::body_capture_end::left_open:
      lease.keep(); // CUDA would destroy the body graph if this capture ended
      detail::control_flow::refuse_invalidated_body(construct, index, stream);
    case detail::control_flow::body_capture_end::root_ended:
      detail::control_flow::refuse_invalidated_body(construct, index, stream);
    }
    detail::control_flow::check_body_rules(graph, construct, index);
  }

  /// Abandons the body's capture only: the parent scope discards the rest.
  template <class Lifecycle>
  void abandon(Lifecycle& lifecycle, cudaStream_t stream) noexcept {
    forget(lifecycle, stream);
    if (detail::control_flow::end_body_capture(stream, graph, parent, root) ==
        detail::control_flow::body_capture_end::left_open) {
      lease.keep();
    }
  }

private:
  /// Blocks freed on the body's stream become the parent stream's to reuse: what the parent's
  /// stream captures next (later work, the next conditional's bodies) depends on the node, so
  /// runs after the body, every iteration of it.
  template <class Lifecycle>
  static void hand_over(Lifecycle& lifecycle, cudaStream_t stream, cudaStream_t to) noexcept {
    detail::contract::hand_over_stream(lifecycle.pool(key()), stream, to);
  }

  /// An abandoned body: nothing freed on its stream is reused (the capture is being discarded).
  template <class Lifecycle>
  static void forget(Lifecycle& lifecycle, cudaStream_t stream) noexcept {
    detail::contract::forget_stream(lifecycle.pool(key()), stream);
  }
};

} // namespace capture_kind

} // namespace graphcap
