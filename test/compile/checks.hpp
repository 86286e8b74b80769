// test/compile/checks.hpp - compile-time facts about graphcap, checked under g++ and nvcc.
// Building this is the test: a broken promise is a build error.
#pragma once

#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace graphcap_checks {

using namespace graphcap;

// ---- "off" policies are empty: they cost no byte ----------------------------------------------
static_assert(std::is_empty_v<pool::off>);
static_assert(std::is_empty_v<annot::off>);
static_assert(std::is_empty_v<liveness::off>);
static_assert(std::is_empty_v<mode::global> && std::is_empty_v<mode::thread_local_> &&
              std::is_empty_v<mode::relaxed>);
static_assert(std::is_empty_v<annot::off::marker>);

// ---- the lean graph against a fixed reference --------------------------------------------------
// The reference is what benchmark/workload.cuh's raw arm keeps to capture once and replay: the
// template and the executable graph. It is fixed: never edited to match graphcap. What
// lean_graph keeps beyond it is listed here field by field, each with its reason; adding a field
// to graphcap means adding a line here and to docs/design.md ("The shape"), in the same commit.
struct raw_arm_reference {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
};
static_assert(sizeof(raw_arm_reference) == 2 * sizeof(void*));
struct beyond_the_reference {
  // The graph's own capture stream, made once and reused: capture() without a stream makes no
  // stream each time.
  cudaStream_t capture_stream;
  // The device captured on: replay and reset on another one are refused, not crashes.
  int device;
  // The side stream's device (it may differ from the last capture's).
  int capture_stream_device;
  // node_count(): counted from the template at its first call after a capture, then kept
  // (CUDA cannot count an executable's nodes); a flag bit while not yet counted.
  std::uint32_t node_count;
  // Empty / capturing / captured: a state_error instead of CUDA's error.
  std::uint8_t state;
  // keep_graph: the template stays for instantiate() and DOT.
  bool keep_graph;
  // Captures so far: caches built from the graph (replay_loop) notice a recapture.
  std::uint16_t generation;
};
static_assert(sizeof(beyond_the_reference) ==
              sizeof(void*) + 2 * sizeof(int) + sizeof(std::uint32_t) + 4);
static_assert(sizeof(lean_graph) == sizeof(raw_arm_reference) + sizeof(beyond_the_reference),
              "lean_graph holds a field not listed in beyond_the_reference: list it, with why");
static_assert(sizeof(lean_graph) == 40); // docs/design.md and examples/configurations.cu say 40
// Every mode is as lean: the mode is a template argument, never stored.
static_assert(sizeof(basic_graph<mode::relaxed, pool::off, annot::off, liveness::off>) ==
              sizeof(lean_graph));
static_assert(sizeof(basic_graph<mode::thread_local_, pool::off, annot::off, liveness::off>) ==
              sizeof(lean_graph));

// ---- the mode value goes straight into cudaStreamBeginCapture -----------------------------------
static_assert(mode::global::value == cudaStreamCaptureModeGlobal);
static_assert(mode::thread_local_::value == cudaStreamCaptureModeThreadLocal);
static_assert(mode::relaxed::value == cudaStreamCaptureModeRelaxed);

// ---- concepts: each policy satisfies its own slot's concept and no other -----------------------
static_assert(capture_mode<mode::global> && capture_mode<mode::thread_local_> &&
              capture_mode<mode::relaxed>);
static_assert(pool_strategy<pool::off>);
static_assert(annotation_policy<annot::off>);
static_assert(liveness_policy<liveness::off>);
static_assert(!capture_mode<pool::off> && !capture_mode<int>);
static_assert(!pool_strategy<annot::off> && !pool_strategy<mode::global>);
static_assert(!annotation_policy<liveness::off> && !annotation_policy<pool::off>);
static_assert(!liveness_policy<annot::off> && !liveness_policy<void*>);

// ---- graph_with: named policies in any order, lean defaults for the rest ------------------------
static_assert(std::is_same_v<graph_with<>, lean_graph>);
static_assert(std::is_same_v<graph_with<mode::relaxed>,
                             basic_graph<mode::relaxed, pool::off, annot::off, liveness::off>>);
static_assert(
    std::is_same_v<graph_with<liveness::off, mode::thread_local_, annot::off>,
                   basic_graph<mode::thread_local_, pool::off, annot::off, liveness::off>>);
static_assert(std::is_same_v<graph_with<pool::off, mode::global>, lean_graph>);

// ---- the graph type: move-only, nothrow moves, scope move-only ----------------------------------
static_assert(!std::is_copy_constructible_v<lean_graph> && !std::is_copy_assignable_v<lean_graph>);
static_assert(std::is_nothrow_move_constructible_v<lean_graph> &&
              std::is_nothrow_move_assignable_v<lean_graph>);
static_assert(std::is_nothrow_destructible_v<lean_graph>);
static_assert(std::is_nothrow_default_constructible_v<lean_graph>);
static_assert(!std::is_copy_constructible_v<lean_graph::scope> &&
              std::is_nothrow_move_constructible_v<lean_graph::scope>);
static_assert(std::is_nothrow_destructible_v<lean_graph::scope>);

// ---- the rebinder: move-only (a copy would patch with the original's words), nothrow moves -----
static_assert(!std::is_copy_constructible_v<rebinder<lean_graph>> &&
                  !std::is_copy_assignable_v<rebinder<lean_graph>>,
              "a rebinder's nodes point into its own parameter copies: it must not be copied");
static_assert(std::is_nothrow_move_constructible_v<rebinder<lean_graph>> &&
              std::is_nothrow_move_assignable_v<rebinder<graph_with<liveness::check>>>);
// The rebinders of a piecewise graph and of a family hold the segments' and keys' rebinders.
static_assert(!std::is_copy_constructible_v<rebinder<piecewise_graph<lean_graph>>> &&
              !std::is_copy_constructible_v<rebinder<graph_family<std::size_t>>>);
static_assert(std::is_nothrow_move_constructible_v<rebinder<piecewise_graph<lean_graph>>> &&
              std::is_nothrow_move_constructible_v<
                  rebinder<graph_family<std::size_t, piecewise_graph<shared_pool_graph>>>>);
// A piecewise graph without a context keeps the lean island (the stream alone); with one, the
// island takes the context too.
static_assert(std::is_same_v<piecewise_graph<>::island_type, std::function<void(cudaStream_t)>>);
static_assert(std::is_same_v<piecewise_graph<graph, int>::island_type,
                             std::function<void(cudaStream_t, int&)>>);

// ---- one scope class template, its kinds unrelated: no slicing of a recapture -----------------
static_assert(std::is_same_v<lean_graph::scope, basic_scope<lean_graph, capture_kind::fresh>>);
static_assert(
    std::is_same_v<lean_graph::recapture_scope, basic_scope<lean_graph, capture_kind::update>>);
static_assert(!std::is_convertible_v<lean_graph::recapture_scope, lean_graph::scope> &&
              !std::is_constructible_v<lean_graph::scope, lean_graph::recapture_scope&&>);
static_assert(sizeof(lean_graph::scope) == 2 * sizeof(void*)); // its graph and its stream
static_assert(!std::is_copy_constructible_v<lean_graph::recapture_scope> &&
              std::is_nothrow_move_constructible_v<lean_graph::recapture_scope>);

// ---- one stream parameter type, as cheap as a cudaStream_t ------------------------------------
static_assert(sizeof(stream_ref) == sizeof(cudaStream_t));
static_assert(std::is_trivially_copyable_v<stream_ref>);
static_assert(std::is_convertible_v<cudaStream_t, stream_ref> &&
              std::is_convertible_v<std::nullptr_t, stream_ref> &&
              std::is_convertible_v<stream_ref, cudaStream_t>);
// Every spelling a port of cudaGraphLaunch(exec, stream) may write, each a compile test: a literal
// 0 (once ambiguous between a cudaStream_t and a std::nullptr_t constructor), nullptr, {}, a
// cudaStream_t, and wrappers with get(), stream() or get_stream() (CCCL's cuda::get_stream order;
// graphcap's own scopes have stream()).
struct wrapper_get {
  [[nodiscard]] cudaStream_t get() const noexcept { return nullptr; }
};
struct wrapper_stream {
  [[nodiscard]] cudaStream_t stream() const noexcept { return nullptr; }
};
struct wrapper_get_stream {
  [[nodiscard]] cudaStream_t get_stream() const noexcept { return nullptr; }
};
inline void replay_spellings(lean_graph& graph, cudaStream_t stream, lean_graph::scope& cap) {
  graph.replay(0);
  graph.replay(nullptr);
  graph.replay({});
  graph.replay();
  graph.replay(stream);
  graph.replay(wrapper_get{});
  graph.replay(wrapper_stream{});
  graph.replay(wrapper_get_stream{});
  graph.replay(cap); // a scope's stream
}
static_assert(stream_wrapper<wrapper_get> && stream_wrapper<wrapper_stream> &&
              stream_wrapper<wrapper_get_stream> && stream_wrapper<lean_graph::scope> &&
              !stream_wrapper<int>);

// ---- generic code allocates without `.template` (nvcc: "type name is not allowed") -------------
inline void generic_allocation(graph& g) {
  g.capture([](auto& cap) {
    static_cast<void>(graphcap::allocate<float>(cap, 16));
    static_cast<void>(graphcap::allocate<float>(cap, 16, cap.stream()));
    static_cast<void>(graphcap::make_buffer<int>(cap, 4));
  });
}
static_assert(capture_scope<graph::scope> && capture_scope<graph::recapture_scope> &&
              !capture_scope<int> && !capture_scope<graph>);

// ---- the hooks concept: every shipped policy keeps it; noexcept where the graph needs it ------
static_assert(lifecycle_hooks<pool::off> && lifecycle_hooks<pool::private_pool> &&
              lifecycle_hooks<pool::shared> && lifecycle_hooks<pool::user> &&
              lifecycle_hooks<pool::graph_memory_nodes>);
static_assert(lifecycle_hooks<annot::off> && lifecycle_hooks<liveness::off> &&
              lifecycle_hooks<liveness::check>);
static_assert(noexcept(std::declval<pool::private_pool&>().on_reset()) && noexcept(
    std::declval<liveness::check&>().on_capture_abort()));

// ---- errors: one hierarchy, capture failures are CUDA failures ----------------------------------
static_assert(std::derived_from<cuda_error, error> &&
              std::derived_from<capture_error, cuda_error> &&
              std::derived_from<state_error, error> &&
              std::derived_from<error, std::runtime_error>);

// ---- annot::off's mark returns the empty marker -------------------------------------------------
static_assert(
    std::is_same_v<decltype(std::declval<lean_graph::scope&>().mark("x")), annot::off::marker>);
static_assert(std::is_same_v<decltype(std::declval<lean_graph::scope&>().mark({{"k", "v"}})),
                             annot::off::marker>);
// ... and compiles to nothing: no storage in the graph, no call (it is a constant expression).
static_assert(sizeof(annot::off::marker) == 1);
static_assert(noexcept(std::declval<annot::off&>().mark(nullptr, "x")));
inline constexpr annot::off::marker off_mark_by_name = annot::off{}.mark(nullptr, "x");
inline constexpr annot::off::marker off_mark_by_entries = annot::off{}.mark(nullptr, {{"k", "v"}});
static_assert(sizeof(graph_with<liveness::check>) ==
              sizeof(basic_graph<mode::global, pool::off, annot::off, liveness::check>));

// ---- the lifecycle is closed: private data and steps; the wings hold a key to the policies ----
using lean_lifecycle = detail::graph_lifecycle<mode::global, pool::off, annot::off, liveness::off>;
template <class L, class = void>
struct reaches_data : std::false_type {};
template <class L>
struct reaches_data<L, std::void_t<decltype(std::declval<L&>().core_)>> : std::true_type {};
template <class L, class = void>
struct reaches_steps : std::false_type {};
template <class L>
struct reaches_steps<L, std::void_t<decltype(std::declval<L&>().begin(nullptr))>> : std::true_type {
};
template <class L, class = void>
struct reaches_policies : std::false_type {};
template <class L>
struct reaches_policies<L, std::void_t<decltype(std::declval<L&>().pool())>> : std::true_type {};
struct open_lifecycle { // the control: the same names, public, are detected
  int core_ = 0;
  void begin(const void* /*stream*/) {}
  int pool() { return 0; }
};
static_assert(reaches_data<open_lifecycle>::value && reaches_steps<open_lifecycle>::value &&
              reaches_policies<open_lifecycle>::value);
static_assert(!reaches_data<lean_lifecycle>::value && !reaches_steps<lean_lifecycle>::value &&
                  !reaches_policies<lean_lifecycle>::value,
              "only the graph, its scopes and the capture kinds reach a lifecycle's inside");
static_assert(!std::is_default_constructible_v<detail::policy_key>,
              "only a core_extension can make the key to a lifecycle's policies");
// A wing holds the key by deriving from core_extension; its key() is protected, so code that
// does not derive cannot call it (the control: a class that derives and re-exports it can).
template <class E, class = void>
struct calls_key : std::false_type {};
template <class E>
struct calls_key<E, std::void_t<decltype(E::key())>> : std::true_type {};
struct key_holder : detail::core_extension {
  using core_extension::key;
};
static_assert(calls_key<key_holder>::value && !calls_key<detail::core_extension>::value,
              "core_extension::key() is for the wings that derive from it");
static_assert(sizeof(lean_lifecycle) == sizeof(lean_graph));

} // namespace graphcap_checks
