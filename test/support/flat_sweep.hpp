// test/support/flat_sweep.hpp - the fault sweep of captures without bodies (fault_sweep.cpp
// for the core policies, annotation_fault_sweep.cpp for annot::on): for each scenario, every CUDA
// call of a clean run fails once in turn (test/support/fault_sweep.hpp). Whatever failed:
//  - the failure surfaces as a typed graphcap error carrying the injected status and naming the
//    call, or propagates unchanged when it was the test's own call, or is absorbed where an
//    absorption rule names the function for the step it fell in (flat_sweep_rules.hpp);
//  - no stream is left capturing and CUDA's last error is clear;
//  - the same graph object resets and runs the scenario cleanly afterwards;
//  - once everything is destroyed, the double holds no stream, event, graph, executable or
//    allocation (a destroy call that failed leaks its one object: it cannot be retried).
#pragma once

#include <graphcap/graphcap.hpp>
#include <graphcap/replay_loop.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "fault_sweep.hpp"
#include "flat_sweep_rules.hpp"

#include <cuda_double/control.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace flat_sweep {

namespace gc = graphcap;
using gcsweep::phase;
using gcsweep::step;
using gctest::own;

inline constexpr std::size_t bytes = 4096;

/// What one graph needs from outside: the caller's streams, an input buffer, a host buffer the
/// graph copies to, a user memory pool and a shared pool handle. Made before the sweep window.
class fixture {
public:
  fixture() {
    CUDA_REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_REQUIRE(cudaStreamCreateWithFlags(&replay_stream, cudaStreamNonBlocking));
    CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&input), bytes));
    shared_pool.emplace(); // makes no CUDA call
  }
  ~fixture() {
    shared_pool.reset();
    static_cast<void>(cudaStreamSynchronize(replay_stream));
    static_cast<void>(cudaFree(input));
    static_cast<void>(cudaStreamDestroy(replay_stream));
    static_cast<void>(cudaStreamDestroy(stream));
    static_cast<void>(cudaGetLastError());
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;
  fixture(fixture&&) = delete;
  fixture& operator=(fixture&&) = delete;

  cudaStream_t stream = nullptr;
  cudaStream_t replay_stream = nullptr;
  unsigned char* input = nullptr;
  std::vector<unsigned char> host = std::vector<unsigned char>(bytes, 0);
  std::size_t iterations = 0;    // what the loop scenario's host function counts
  gctest::memory_pool user_pool; // given back by its own destructor, after the body above
  std::optional<gc::pool_handle> shared_pool;
  std::vector<cudaStream_t> capture_streams; // every stream a capture ran on
};

template <class Graph>
Graph make_graph(fixture& fx, bool keep) {
  using pool = typename Graph::pool_type;
  if constexpr (std::is_same_v<pool, gc::pool::shared>) {
    return keep ? Graph{gc::keep_graph, *fx.shared_pool} : Graph{*fx.shared_pool};
  } else if constexpr (std::is_same_v<pool, gc::pool::user>) {
    return keep ? Graph{gc::keep_graph, fx.user_pool} : Graph{fx.user_pool};
  } else {
    return keep ? Graph{gc::keep_graph} : Graph{};
  }
}

inline void CUDART_CB count_iteration(void* fixture_pointer) {
  ++static_cast<fixture*>(fixture_pointer)->iterations;
}

/// The captured work: memsets and copies the host can execute, in annotated scopes (no-ops
/// under annot::off); with an allocating pool, blocks from the pool (one reused after a
/// deallocate, one large enough for a slab of its own). `counted`: a host function counts each
/// iteration (the loop scenario).
template <class Graph>
void body(typename Graph::scope& cap, fixture& fx, int value, bool counted = false) {
  fx.capture_streams.push_back(cap.stream());
  const auto region = cap.mark("sweep");
  unsigned char* result = fx.input;
  own(cudaMemsetAsync(fx.input, value, bytes, cap.stream()), "memset of the input");
  if (counted) {
    own(cudaLaunchHostFunc(cap.stream(), count_iteration, &fx), "the counting host function");
  }
  if constexpr (Graph::pool_type::can_allocate) {
    const auto inner = cap.mark({{"name", "pool"}, {"step", "allocate"}});
    auto* scratch = cap.template allocate<float>(64);
    own(cudaMemsetAsync(scratch, 0, 64 * sizeof(float), cap.stream()), "memset of scratch");
    cap.deallocate(scratch);
    auto* large =
        cap.template allocate<unsigned char>(gc::detail::pool::pool_core::small_limit + 1);
    own(cudaMemsetAsync(large, 0, 16, cap.stream()), "memset of the large block");
    result = cap.template allocate<unsigned char>(bytes);
    own(cudaMemcpyAsync(result, fx.input, bytes, cudaMemcpyDeviceToDevice, cap.stream()),
        "copy into the pool's block");
    own(cudaMemcpyAsync(fx.host.data(), result, bytes, cudaMemcpyDeviceToHost, cap.stream()),
        "copy to the host");
    if constexpr (std::is_same_v<typename Graph::pool_type, gc::pool::graph_memory_nodes>) {
      // CUDA frees an allocation the graph does not free only at the next launch: after the
      // last one it would outlive the graph (docs/pools.md). Free nodes avoid that.
      cap.deallocate(large);
      cap.deallocate(result);
    }
  } else {
    own(cudaMemcpyAsync(fx.host.data(), result, bytes, cudaMemcpyDeviceToHost, cap.stream()),
        "copy to the host");
  }
}

/// Checks the work of the last replays, and clears it for the next.
inline void check_result(fixture& fx, int value) {
  own(cudaStreamSynchronize(fx.replay_stream), "synchronize after the replay");
  if (fx.host != std::vector<unsigned char>(bytes, static_cast<unsigned char>(value))) {
    throw gcsweep::scenario_broken("the replay did not produce the captured values");
  }
  std::fill(fx.host.begin(), fx.host.end(), 0);
}

/// Replays (step `where`) and checks that the graph's work ran.
template <class Graph>
void replay_and_check(Graph& graph, fixture& fx, int value, phase where = phase::replay) {
  step(where);
  graph.replay(fx.replay_stream);
  check_result(fx, value);
}

template <class Graph>
void require_not_capturing(Graph& graph, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    throw gcsweep::scenario_broken("a stream was left capturing");
  }
  static_cast<void>(cudaGetLastError()); // a side stream that no longer exists
  if (graph.state() == gc::graph_state::capturing) {
    throw gcsweep::scenario_broken("the graph was left in the capturing state");
  }
}

// ---- the scenarios -------------------------------------------------------------------------

/// Capture with allocations, replay twice, reset, capture on the caller's stream, replay, then
/// replace the graph by a new one (its teardown is swept too).
template <class Graph>
void capture_replay_reset(Graph& graph, fixture& fx) {
  using scope = typename Graph::scope;
  step(phase::capture);
  graph.capture([&](scope& cap) { body<Graph>(cap, fx, 1); });
  replay_and_check(graph, fx, 1);
  replay_and_check(graph, fx, 1);
  step(phase::reset);
  graph.reset();
  step(phase::capture);
  graph.capture(fx.stream, [&](scope& cap) { body<Graph>(cap, fx, 2); });
  replay_and_check(graph, fx, 2);
  step(phase::teardown);
  graph = make_graph<Graph>(fx, graph.keeps_graph());
}

/// keep_graph: explicit instantiate, upload, instantiate again, lazy instantiation on replay.
template <class Graph>
void keep_graph_instantiate(Graph& graph, fixture& fx) {
  using scope = typename Graph::scope;
  step(phase::capture);
  graph.capture([&](scope& cap) { body<Graph>(cap, fx, 3); });
  step(phase::instantiate);
  graph.instantiate();
  step(phase::upload);
  graph.upload(fx.replay_stream);
  replay_and_check(graph, fx, 3);
  step(phase::instantiate);
  graph.instantiate(); // again, from the kept template
  replay_and_check(graph, fx, 3);
  step(phase::reset);
  graph.reset();
  step(phase::capture);
  graph.capture([&](scope& cap) { body<Graph>(cap, fx, 4); });
  replay_and_check(graph, fx, 4, phase::lazy_replay);
}

/// The RAII form: a scope abandoned before end() (discarded), then one that ends.
template <class Graph>
void raii_scope(Graph& graph, fixture& fx) {
  {
    step(phase::capture);
    auto cap = graph.begin_capture(fx.stream);
    body<Graph>(cap, fx, 5);
    step(phase::discard);
  } // destroyed before end(): the capture is discarded
  require_not_capturing(graph, fx.stream);
  {
    step(phase::capture);
    auto cap = graph.begin_capture();
    body<Graph>(cap, fx, 6);
    cap.end();
  }
  replay_and_check(graph, fx, 6);
}

/// The capture body throws: the exception propagates unchanged, then a capture works.
template <class Graph>
void body_throws(Graph& graph, fixture& fx) {
  using scope = typename Graph::scope;
  try {
    step(phase::capture);
    graph.capture([&](scope& cap) {
      body<Graph>(cap, fx, 7);
      step(phase::discard);
      throw gcsweep::user_exception{};
    });
    throw gcsweep::scenario_broken("the body's exception was lost");
  } catch (const gcsweep::user_exception&) {
    if (!graph.empty()) {
      throw gcsweep::scenario_broken("the graph is not empty after a failed capture");
    }
  }
  step(phase::capture);
  graph.capture([&](scope& cap) { body<Graph>(cap, fx, 8); });
  replay_and_check(graph, fx, 8);
}

/// replay_loop on a kept template: n replays as launches of an unrolled executable of two
/// copies and of the graph; then a recapture, which the loop follows (it builds again).
template <class Graph>
void loop_replays(Graph& graph, fixture& fx) {
  using scope = typename Graph::scope;
  constexpr bool unrolls = !std::is_same_v<typename Graph::pool_type, gc::pool::graph_memory_nodes>;
  gc::replay_loop<Graph> loop{graph, {.max_copies = 2}};
  for (const int value : {9, 10}) {
    if (value == 10) {
      step(phase::reset);
      graph.reset();
    }
    step(phase::capture);
    graph.capture([&](scope& cap) { body<Graph>(cap, fx, value, true); });
    step(phase::loop);
    fx.iterations = 0;
    loop.replay(fx.replay_stream, 5); // one replay, two launches of two copies
    check_result(fx, value);
    if (fx.iterations != 5) {
      throw gcsweep::scenario_broken("the loop did not run the graph 5 times");
    }
    if (loop.copies() != (unrolls ? 2U : 1U)) {
      throw gcsweep::scenario_broken("the loop did not unroll: " +
                                     std::string{loop.unrolled_reason()});
    }
  }
}

/// A slab pool handed over: pool() of a replayed graph (a private pool waits for the device), the
/// graph reset (it waits again: its blocks go back to a shared pool), a second graph capturing
/// from the same pool.
template <class Graph>
void hand_over(Graph& graph, fixture& fx) {
  using scope = typename Graph::scope;
  using second_graph = gc::graph_with<gc::pool::shared>;
  step(phase::capture);
  graph.capture([&](scope& cap) { body<Graph>(cap, fx, 11); });
  replay_and_check(graph, fx, 11);
  step(phase::handover);
  second_graph second{graph.pool()};
  step(phase::reset);
  graph.reset();
  step(phase::capture);
  second.capture([&](second_graph::scope& cap) { body<second_graph>(cap, fx, 12); });
  replay_and_check(second, fx, 12);
  step(phase::teardown);
  second = second_graph{};
}

template <class Graph>
struct scenario {
  const char* name;
  bool keep;
  void (*run)(Graph&, fixture&);
};

template <class Graph>
std::vector<scenario<Graph>> scenarios() {
  std::vector<scenario<Graph>> list{
      {"capture, allocate, replay, reset", false, &capture_replay_reset<Graph>},
      {"keep_graph, instantiate, upload", true, &keep_graph_instantiate<Graph>},
      {"RAII scope, abandoned then ended", false, &raii_scope<Graph>},
      {"an exception in the capture body", false, &body_throws<Graph>},
      {"replay_loop, unrolled, recaptured", true, &loop_replays<Graph>}};
  if constexpr (Graph::pool_type::has_handle && Graph::pool_type::can_allocate) {
    list.push_back({"pool() handed over to a second graph", false, &hand_over<Graph>});
  }
  return list;
}

/// The calls a clean run of `sc` makes, on a fresh double.
template <class Graph>
gcsweep::recording record(const scenario<Graph>& sc) {
  cuda_double::reset();
  fixture fx;
  Graph graph = make_graph<Graph>(fx, sc.keep);
  gcsweep::recorder recorder;
  const gcsweep::outcome clean = gcsweep::attempt([&] { sc.run(graph, fx); });
  INFO(clean.message);
  REQUIRE(clean.what == gcsweep::outcome::kind::success);
  return recorder.finish();
}

/// One injected failure: the n-th call of `function` fails once.
template <class Graph>
void inject(const scenario<Graph>& sc, const gcsweep::call& failing) {
  using kind = gcsweep::outcome::kind;
  const std::string& function = failing.function;
  cuda_double::reset();
  {
    fixture fx;
    Graph graph = make_graph<Graph>(fx, sc.keep);
    const std::size_t before = cuda_double::calls(function.c_str());
    cuda_double::fail_call(function.c_str(), gcsweep::injected, static_cast<int>(failing.nth));
    const gcsweep::outcome failed = gcsweep::attempt([&] { sc.run(graph, fx); });
    INFO("outcome: " << failed.type << " " << failed.message);
    gcsweep::print(sc.name, failing, failed);
    REQUIRE(cuda_double::calls(function.c_str()) >= before + failing.nth); // the fault fired

    switch (failed.what) {
    case kind::success: {
      const std::vector<gcsweep::absorption> rules = absorptions<Graph>();
      CHECK(gcsweep::absorbed_by(rules, function, failing.where) != nullptr);
      break;
    }
    case kind::graphcap_error:
      check_error<Graph>(function, failed);
      break;
    case kind::own_failure:
      break; // the user's own call failed: its exception propagated unchanged
    case kind::user_exception:
    case kind::broken:
    case kind::other:
      FAIL("the scenario broke: " << failed.message);
      break;
    }
    for (cudaStream_t stream : fx.capture_streams) {
      CHECK_NOTHROW(require_not_capturing(graph, stream));
    }
    gctest::require_no_last_error();
    // graphcap's relaxed guards put the thread's mode back (unless putting it back failed).
    if (function != "cudaThreadExchangeStreamCaptureMode") {
      CHECK(gcsweep::thread_capture_mode() == cudaStreamCaptureModeGlobal);
    }

    // The same graph object works again after reset().
    CHECK_NOTHROW(graph.reset());
    const gcsweep::outcome again = gcsweep::attempt([&] { sc.run(graph, fx); });
    INFO("rerun: " << again.message);
    CHECK(again.what == kind::success);
    gcsweep::policy_absorptions<Graph>::check_case();
  }
  gcsweep::check_nothing_left(function, {.malloced_slabs = malloced_slabs<Graph>()});
}

/// Sweeps every scenario for `Graph`; prints the cases per scenario.
template <class Graph>
void sweep(const char* config) {
  std::size_t total = 0;
  for (const scenario<Graph>& sc : scenarios<Graph>()) {
    INFO("scenario: " << sc.name);
    const std::size_t cases = gcsweep::sweep_calls(
        [&] { return record(sc); }, [&](const gcsweep::call& failing) { inject(sc, failing); });
    CHECK(cases >= 20);
    std::printf("fault sweep, %s, %s: %zu cases\n", config, sc.name, cases);
    total += cases;
  }
  std::printf("fault sweep, %s: %zu cases\n", config, total);
  cuda_double::reset();
}

} // namespace flat_sweep
