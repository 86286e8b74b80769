// graphcap/core/scope.hpp - the capture in progress: basic_scope<Graph, Kind>, what
// `graph.begin_capture()` and `begin_recapture()` return and what `capture(work)` hands `work`.
//
//   auto cap = graph.begin_capture(stream);     // graph_type::scope
//   float* tmp = cap.allocate<float>(n);        // from the graph's pool, fixed address
//   auto region = cap.mark("attention");        // annotations (no-op when off)
//   kernel<<<blocks, threads, 0, cap.stream()>>>(tmp, n);
//   cap.end();                                  // ends the capture and instantiates
//
// One class template for every kind of capture. A scope owns its own state: the graph whose
// policies serve it, the stream it captures, and what its end() does (Kind): capture_kind::fresh
// instantiates, capture_kind::update (a recapture) updates the previous executable graph in place.
// The kinds are distinct types with no conversion between them, so a recapture scope cannot be
// sliced into one that would instantiate anew. Move-only; destroyed before end() it ends and
// discards the capture, leaving the stream not capturing.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/capture_kind.hpp>
#include <graphcap/core/detail/allocation_size.hpp>
#include <graphcap/core/detail/graph_lifecycle.hpp>
#include <graphcap/core/detail/scope_checks.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {

namespace detail {
/// Calls `work` with what it takes: the scope (`scope&` or `auto&`), the capture stream
/// (`cudaStream_t`, or anything a cudaStream_t converts to), or nothing. A direct call, not
/// std::invoke: <functional> would bring the unordered containers into the lean core.
template <class Scope, class Work>
decltype(auto) invoke_work(Scope& cap, Work&& work) {
  if constexpr (std::is_invocable_v<Work, Scope&>) {
    return std::forward<Work>(work)(cap);
  } else if constexpr (std::is_invocable_v<Work, cudaStream_t>) {
    return std::forward<Work>(work)(cap.stream());
  } else if constexpr (std::is_invocable_v<Work>) {
    return std::forward<Work>(work)();
  } else {
    refuse_work<Scope, Work>(); // one static_assert, and no call to report again
  }
}

struct scope_services;
} // namespace detail

/// The capture in progress on one graph: its stream, the features the graph's policies offer
/// during a capture (allocate, make_buffer, mark, input), and end().
template <class Graph, class Kind>
class basic_scope {
  // What the scope drives: the graph's handles, policies and lifecycle steps.
  using lifecycle =
      detail::graph_lifecycle<typename Graph::mode_type, typename Graph::pool_type,
                              typename Graph::annot_type, typename Graph::liveness_type>;

public:
  using graph_type = Graph;                    ///< the graph being captured
  using pool_type = typename Graph::pool_type; ///< its Pool policy
  using kind_type = Kind;                      ///< what end() does (graphcap::capture_kind)

  /// Takes `other`'s capture; `other` is no longer active.
  basic_scope(basic_scope&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), stream_(other.stream_),
        kind_(std::move(other.kind_)) {}
  basic_scope& operator=(basic_scope&&) = delete;
  basic_scope(const basic_scope&) = delete;
  basic_scope& operator=(const basic_scope&) = delete;

// g++ 13 -O2 warns graph_ "may be used uninitialized" here for a scope in a std::optional (a
// piecewise segment): a false positive (the payload is destroyed only when engaged) that -Werror
// turns into an error in a user's build too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  /// Before end(): ends and discards the capture (never throws).
  ~basic_scope() {
    if (graph_ != nullptr) {
      kind_.abandon(*graph_, stream_); // a body's: its own stream only, the parent goes on
    }
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  /// The stream being captured: issue the graph's work here (kernels, copies, library calls).
  [[nodiscard]] cudaStream_t stream() const noexcept {
    return stream_;
  }

  /// True until end() was called (or the scope was moved from).
  [[nodiscard]] bool active() const noexcept {
    return graph_ != nullptr;
  }

  /// Ends the capture and makes the executable graph (fresh: instantiates it, unless
  /// keep_graph; update: updates the previous one in place, or instantiates). Ended on the
  /// wrong thread, the capture goes on and end() may be retried on the thread that began it.
  /// \throws capture_error (invalidated, forks unjoined, wrong thread); cuda_error (instantiation);
  /// state_error if ended already. \post inactive, the graph instantiated (keep_graph: captured);
  /// on a throw the graph is empty, no stream capturing (wrong thread: the capture goes on).
  void end() {
    if (graph_ == nullptr) [[unlikely]] {
      throw_ended();
    }
    lifecycle* const graph = std::exchange(graph_, nullptr);
    try {
      kind_.end(*graph, stream_);
    } catch (const capture_error& failure) {
      if (failure.code() == cudaErrorStreamCaptureWrongThread) {
        graph_ = graph; // still capturing
      }
      throw;
    }
  }

  /// After a recapture's end(): whether the executable graph was updated in place or
  /// instantiated anew, and why.
  [[nodiscard]] const update_result&
  update() const noexcept requires std::same_as<Kind, capture_kind::update> {
    return kind_.result;
  }

  /// Memory for `count` objects of type T from the graph's pool, at an address fixed for every
  /// replay, for work on the capture stream. Needs an allocating Pool policy.
  /// \throws std::invalid_argument (a negative count, bytes over PTRDIFF_MAX); out_of_memory_error
  /// (the pool cannot grow); state_error after end() or while the pool sleeps; cuda_error.
  template <class T, std::integral Count>
  [[nodiscard]] T* allocate(Count count) {
    return allocate<T>(count, stream_);
  }
  /// The same, for work on `stream`, a stream forked from the capture stream.
  template <class T, std::integral Count>
  [[nodiscard]] T* allocate(Count count, stream_ref stream) {
    detail::require_allocating_pool<pool_type>(); // without a pool: this error, and no other
    if constexpr (pool_type::can_allocate) {
      Kind::template check_allocate<pool_type>(); // a kind may refuse a pool (static_assert)
      const std::size_t objects = detail::element_count<T>(count, "allocate");
      return active_graph().pool().template allocate<T>(objects, stream.get());
    } else {
      return nullptr;
    }
  }

  /// Memory for `count` objects of type T from the graph's pool, owned by the returned buffer:
  /// it stays valid, at the same address, while any copy of the buffer lives, even after the
  /// graph is reset or destroyed (an output you keep). Needs a slab pool. Counts as allocate().
  /// \throws as allocate().
  template <class T, std::integral Count>
  [[nodiscard]] buffer<T> make_buffer(Count count) {
    return make_buffer<T>(count, stream_);
  }
  /// The same, for work on `stream`, a stream forked from the capture stream.
  template <class T, std::integral Count>
  [[nodiscard]] buffer<T> make_buffer(Count count, stream_ref stream) {
    detail::require_slab_pool<pool_type>(); // without a slab pool: this error, and no other
    if constexpr (pool_type::has_handle) {
      const std::size_t objects = detail::element_count<T>(count, "make_buffer");
      return active_graph().pool().template make_buffer<T>(objects, stream.get());
    } else {
      return buffer<T>{};
    }
  }

  /// Gives back memory allocate() returned in this capture: later allocations of the same size
  /// on the same stream in this capture may reuse it. Needs an allocating Pool policy.
  /// \throws error for memory not this capture's or a buffer's; cuda_error; state_error after end.
  template <class T>
  void deallocate(T* pointer) {
    deallocate(pointer, stream_);
  }
  /// The same, for memory last used by work on `stream` (where it was allocated for).
  template <class T>
  void deallocate(T* pointer, stream_ref stream) {
    detail::require_allocating_pool<pool_type, /*Deallocating=*/true>();
    if constexpr (pool_type::can_allocate) {
      active_graph().pool().deallocate(pointer, stream.get());
    }
  }

  // ---- deprecated in 0.5, removed in 0.6: control flow's member spellings ---------------------
  // <graphcap/control_flow.hpp>'s free functions replace them (graphcap::make_condition(cap, ..),
  // graphcap::if_(cap, ..), if_else, switch_, while_). Each forwards there by argument-dependent
  // lookup, so the core names no wing; without that header, one readable error.

  /// Deprecated: graphcap::make_condition(cap, initial, reset).
  template <class... Arguments, class Self = basic_scope>
  [[deprecated("graphcap: cap.condition(...) is now graphcap::make_condition(cap, ...) "
               "(<graphcap/control_flow.hpp>)")]] [[nodiscard]] auto
  condition(Arguments&&... arguments) {
    return detail::spelling::call_condition(static_cast<Self&>(*this),
                                            std::forward<Arguments>(arguments)...);
  }
  /// Deprecated: graphcap::if_(cap, flag, body).
  template <class... Arguments, class Self = basic_scope>
  [[deprecated("graphcap: cap.if_(flag, body) is now graphcap::if_(cap, flag, body) "
               "(<graphcap/control_flow.hpp>)")]] void
  if_(Arguments&&... arguments) {
    detail::spelling::call_if_(static_cast<Self&>(*this), std::forward<Arguments>(arguments)...);
  }
  /// Deprecated: graphcap::if_else(cap, flag, then_body, else_body).
  template <class... Arguments, class Self = basic_scope>
  [[deprecated("graphcap: cap.if_else(...) is now graphcap::if_else(cap, ...) "
               "(<graphcap/control_flow.hpp>)")]] void
  if_else(Arguments&&... arguments) {
    detail::spelling::call_if_else(static_cast<Self&>(*this),
                                   std::forward<Arguments>(arguments)...);
  }
  /// Deprecated: graphcap::switch_(cap, flag, bodies...).
  template <class... Arguments, class Self = basic_scope>
  [[deprecated("graphcap: cap.switch_(...) is now graphcap::switch_(cap, ...) "
               "(<graphcap/control_flow.hpp>)")]] void
  switch_(Arguments&&... arguments) {
    detail::spelling::call_switch_(static_cast<Self&>(*this),
                                   std::forward<Arguments>(arguments)...);
  }
  /// Deprecated: graphcap::while_(cap, flag, body).
  template <class... Arguments, class Self = basic_scope>
  [[deprecated("graphcap: cap.while_(flag, body) is now graphcap::while_(cap, flag, body) "
               "(<graphcap/control_flow.hpp>)")]] void
  while_(Arguments&&... arguments) {
    detail::spelling::call_while_(static_cast<Self&>(*this), std::forward<Arguments>(arguments)...);
  }

  /// Tags the nodes captured while the returned marker lives with `name` (annot::off: no-op).
  /// \throws state_error after end() (annot::on).
  [[nodiscard]] auto mark(std::string_view name) {
    return policy(&lifecycle::annot_).mark(stream_, name);
  }
  /// Tags the nodes captured while the returned marker lives with key/value pairs.
  [[nodiscard]] auto mark(std::initializer_list<annotation_entry> entries) {
    return policy(&lifecycle::annot_).mark(stream_, entries);
  }

  /// Declares an input the graph reaches indirectly (a pointer stored in device memory), for
  /// the liveness check (liveness::off: no-op). \throws state_error after end(); a pointer
  /// outside CUDA's memory fails the capture's end (cuda_error).
  void input(const void* pointer) {
    policy(&lifecycle::liveness_).add_input(pointer);
  }

  /// Declares an indirect input whose life the allocator reports through `token`, a
  /// std::weak_ptr (memory of a sub-allocator, whose frees the driver cannot see;
  /// docs/liveness.md). liveness::off: no-op.
  template <class Token>
  void input(const void* pointer, Token token) {
    static_assert(liveness_with_tokens<typename Graph::liveness_type, Token>,
                  "graphcap: scope::input(pointer, token) needs a Liveness policy that takes "
                  "this token: liveness::check takes a std::weak_ptr<const void> (or a "
                  "shared_ptr or weak_ptr that converts to one)");
    policy(&lifecycle::liveness_).add_input(pointer, std::move(token));
  }

private:
  friend Graph;
  template <class, class>
  friend class basic_scope;
  friend struct detail::scope_services;

  basic_scope(lifecycle& graph, cudaStream_t stream, Kind kind) noexcept
      : graph_(&graph), stream_(stream), kind_(std::move(kind)) {}

  /// Runs `work` in `cap` and ends it. Returns what `work` returns, or for a recapture the
  /// update_result. A recapture whose work takes the plain `Graph::scope&` (a step written once
  /// for capture() and recapture()) gets the capture lent as a plain scope for the work's
  /// length, and taken back for the update.
  template <class Work>
  static decltype(auto) run(basic_scope cap, Work&& work) {
    if constexpr (std::is_same_v<Kind, capture_kind::update>) {
      using plain_scope = basic_scope<Graph, capture_kind::fresh>;
      if constexpr (!std::is_invocable_v<Work, basic_scope&> &&
                    std::is_invocable_v<Work, plain_scope&>) {
        plain_scope lent{*std::exchange(cap.graph_, nullptr), cap.stream_, {}};
        std::forward<Work>(work)(lent);
        if (lent.graph_ == nullptr) {
          throw state_error("graphcap: the work of a recapture ended its capture scope itself; "
                            "let recapture() end it, so that it can update the graph");
        }
        cap.graph_ = std::exchange(lent.graph_, nullptr);
      } else {
        static_cast<void>(detail::invoke_work(cap, std::forward<Work>(work)));
      }
      cap.end();
      return update_result{cap.kind_.result};
    } else {
      using result = decltype(detail::invoke_work(cap, std::forward<Work>(work)));
      if constexpr (std::is_void_v<result>) {
        detail::invoke_work(cap, std::forward<Work>(work));
        cap.end();
      } else {
        result value = detail::invoke_work(cap, std::forward<Work>(work));
        cap.end();
        return value;
      }
    }
  }

  /// The graph's policy object. A stateless policy (every "off" one) needs no graph, so it is
  /// reached with no check at all: its call compiles to nothing, also after end().
  template <class Policy>
  decltype(auto) policy(Policy lifecycle::*member) const {
    if constexpr (std::is_empty_v<Policy>) {
      return Policy{};
    } else {
      return (active_graph().*member);
    }
  }

  GRAPHCAP_COLD [[noreturn]] static void throw_ended() {
    throw state_error("graphcap: this capture scope was already ended (end() called twice, or "
                      "the scope was moved from)");
  }

  lifecycle& active_graph() const {
    if (graph_ == nullptr) [[unlikely]] {
      throw state_error("graphcap: this capture scope has ended; allocate(), mark() and input() "
                        "work only while the capture runs");
    }
    return *graph_;
  }

  lifecycle* graph_; // null once ended (or moved from)
  cudaStream_t stream_;
  [[no_unique_address]] Kind kind_;
};

namespace detail {
/// What a capture scope lends a wing that adds nodes to its capture (control flow's conditional
/// nodes), and nothing more: the policies behind the key, the scope's capture kind, and a nested
/// capture of another kind into the same graph. The one seam between basic_scope and code
/// outside the core; a core_extension's key() opens it (docs/design.md, "Seams").
struct scope_services {
  /// The lifecycle `cap` drives, for its pool(key), annot(key) and liveness(key) (state_error
  /// once `cap` has ended).
  template <class Graph, class Kind>
  static auto& lifecycle(const basic_scope<Graph, Kind>& cap, policy_key /*key*/) {
    return cap.active_graph();
  }
  /// The state of `cap`'s capture kind (a conditional body's streams, for instance).
  template <class Graph, class Kind>
  static const Kind& kind(const basic_scope<Graph, Kind>& cap) noexcept {
    return cap.kind_;
  }
  /// Runs `work` in a capture of kind `Nested` on `stream` (already capturing, into a graph of
  /// `cap`'s capture) and ends it, as capture(work) does; the scope `work` gets serves `cap`'s
  /// graph and policies. A throw ends and discards the nested capture only (Nested::abandon).
  template <class Nested, class Graph, class Kind, class Work>
  static void run_nested(const basic_scope<Graph, Kind>& cap, policy_key /*key*/,
                         cudaStream_t stream, Nested kind, Work&& work) {
    basic_scope<Graph, Nested> nested{cap.active_graph(), stream, std::move(kind)};
    static_cast<void>(basic_scope<Graph, Nested>::run(std::move(nested), std::forward<Work>(work)));
  }
};
} // namespace detail

/// Any capture scope: a capture's (Graph::scope), a recapture's (Graph::recapture_scope) or a
/// conditional body's (graphcap::body_scope<Graph>). A step written once for all three takes a
/// Scope& constrained by this, and allocates with the free functions below (no `.template` needed).
template <class Scope>
concept capture_scope = requires {
  typename Scope::graph_type;
  typename Scope::kind_type;
}
&&std::same_as<std::remove_const_t<Scope>,
               basic_scope<typename Scope::graph_type, typename Scope::kind_type>>;

/// `cap.allocate<T>(count)`, spelled so that generic code (an `auto&` scope) needs no `.template`:
/// `graphcap::allocate<float>(cap, n)`.
template <class T, capture_scope Scope, std::integral Count>
[[nodiscard]] T* allocate(Scope& cap, Count count) {
  return cap.template allocate<T>(count);
}
/// `cap.allocate<T>(count, stream)`, the same way.
template <class T, capture_scope Scope, std::integral Count>
[[nodiscard]] T* allocate(Scope& cap, Count count, stream_ref stream) {
  return cap.template allocate<T>(count, stream);
}
/// `cap.make_buffer<T>(count)`, the same way: `graphcap::make_buffer<float>(cap, n)`.
template <class T, capture_scope Scope, std::integral Count>
[[nodiscard]] buffer<T> make_buffer(Scope& cap, Count count) {
  return cap.template make_buffer<T>(count);
}

} // namespace graphcap
