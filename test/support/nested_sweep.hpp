// test/support/nested_sweep.hpp - the fault sweep of captures with conditional bodies
// (nested_fault_sweep.cpp; annot::on: annotation_fault_sweep.cpp): a capture of depth 3 (an if_
// whose body allocates from the pool and holds a while_ whose body forks to another stream and
// joins back, and an if_ whose body forks and, in the second scenario, does not join), then an
// if_else and a switch_; replayed, reset, captured and replayed again, and destroyed. Every CUDA
// call of a clean run fails in turn (test/support/fault_sweep.hpp), and separately the user's
// exception is thrown at each point of the work. For every case:
//  - a typed graphcap error (naming the call when it carries the injected status), or the
//    user's exception (or the test's own failed call) unchanged, or a failure absorbed where
//    absorptions() names the function for the step it fell in;
//  - no stream the test owns left capturing, CUDA's last error clear;
//  - no violation recorded by the double (what the H200 would not survive: a body graph
//    destroyed twice, a capture into a destroyed body ended);
//  - the same graph object captures and replays again;
//  - once everything is destroyed, the double holds nothing but what graphcap keeps on purpose
//    (body streams and outermost graphs after CUDA destroyed a body: docs/reliability.md) and
//    the one object of a failed destroy.
#pragma once

#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "fault_sweep.hpp"

#include <cuda_double/control.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace nested_sweep {

namespace gc = graphcap;
using gcsweep::phase;
using gcsweep::phases;
using gcsweep::step;
using gctest::own;

inline constexpr std::size_t bytes = 256;

/// The caller's streams, events and buffers, made before the sweep window.
struct fixture {
  cudaStream_t stream = nullptr;
  cudaStream_t side = nullptr;
  cudaEvent_t fork = nullptr;
  cudaEvent_t join = nullptr;
  unsigned char* device = nullptr;
  std::vector<unsigned char> host = std::vector<unsigned char>(bytes, 0);

  fixture() {
    CUDA_REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_REQUIRE(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CUDA_REQUIRE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CUDA_REQUIRE(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), bytes));
  }
  ~fixture() {
    static_cast<void>(cudaFree(device));
    static_cast<void>(cudaEventDestroy(join));
    static_cast<void>(cudaEventDestroy(fork));
    static_cast<void>(cudaStreamDestroy(side));
    static_cast<void>(cudaStreamDestroy(stream));
    static_cast<void>(cudaGetLastError());
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;
  fixture(fixture&&) = delete;
  fixture& operator=(fixture&&) = delete;
};

/// Where the work throws the user's exception (none: it does not).
enum class point : int {
  none = -1,
  start,
  if_body,
  before_fork,
  after_fork,
  while_body_end,
  after_while,
  unjoined_body,
  else_body,
  switch_body,
  end,
  count
};

/// The capture. `unjoined`: the second if_ body forks to the side stream and returns without
/// joining (a capture_error even when nothing else fails). Scopes are annotated (no-ops under
/// annot::off).
template <class Graph>
void capture_nested(Graph& graph, fixture& fx, point throw_at, bool unjoined, int value) {
  const auto at = [&](point here) {
    if (here == throw_at) {
      throw gcsweep::user_exception{};
    }
  };
  const auto memset_all = [&](cudaStream_t stream) {
    own(cudaMemsetAsync(fx.device, value, bytes, stream), "memset");
  };
  step(phase::capture);
  graph.capture(fx.stream, [&](auto& cap) {
    const auto outer = cap.mark("outer");
    at(point::start);
    memset_all(cap.stream());
    graphcap::if_(cap, graphcap::make_condition(cap, 1), [&](auto& body) {
      const auto region = body.mark("if");
      at(point::if_body);
      if constexpr (Graph::pool_type::can_allocate) {
        unsigned char* block = body.template allocate<unsigned char>(64);
        own(cudaMemsetAsync(block, 0, 64, body.stream()), "memset of a pool block");
      }
      graphcap::while_(body, graphcap::make_condition(body, 0), [&](auto& inner) {
        const auto loop = inner.mark({{"name", "while"}, {"depth", "3"}});
        at(point::before_fork);
        own(cudaEventRecord(fx.fork, inner.stream()), "fork record");
        own(cudaStreamWaitEvent(fx.side, fx.fork, 0), "fork wait");
        own(cudaMemsetAsync(fx.device, value, 1, fx.side), "memset on the side stream");
        at(point::after_fork);
        own(cudaEventRecord(fx.join, fx.side), "join record");
        own(cudaStreamWaitEvent(inner.stream(), fx.join, 0), "join wait");
        at(point::while_body_end);
      });
      at(point::after_while);
      graphcap::if_(body, graphcap::make_condition(body, 0), [&](auto& second) {
        at(point::unjoined_body);
        if (unjoined) {
          own(cudaEventRecord(fx.fork, second.stream()), "fork record");
          own(cudaStreamWaitEvent(fx.side, fx.fork, 0), "fork wait");
          own(cudaMemsetAsync(fx.device, value, 1, fx.side), "memset on the side stream");
        }
      });
    });
    graphcap::if_else(
        cap, graphcap::make_condition(cap, 0), [&](cudaStream_t stream) { memset_all(stream); },
        [&](auto& otherwise) {
          at(point::else_body);
          memset_all(otherwise.stream());
        });
    graphcap::switch_(
        cap, graphcap::make_condition(cap, 1), [&](cudaStream_t stream) { memset_all(stream); },
        [&](auto& chosen) {
          const auto region = chosen.mark("switch");
          at(point::switch_body);
          memset_all(chosen.stream());
        });
    at(point::end);
    own(cudaMemcpyAsync(fx.host.data(), fx.device, bytes, cudaMemcpyDeviceToHost, cap.stream()),
        "copy to the host");
    step(phase::capture_end); // what follows is the outermost capture's end
  });
}

/// Replays and checks what the graph computed.
template <class Graph>
void replay_and_check(Graph& graph, fixture& fx, int value) {
  step(phase::replay);
  std::fill(fx.host.begin(), fx.host.end(), 0);
  graph.replay(fx.stream);
  own(cudaStreamSynchronize(fx.stream), "synchronize after the replay");
  if (fx.host != std::vector<unsigned char>(bytes, static_cast<unsigned char>(value))) {
    throw gcsweep::scenario_broken("the replay did not produce the captured values");
  }
}

/// The scenario: capture (the user's exception at `throw_at`), replay, reset, capture and replay
/// again, then the graph replaced by a new one. With `unjoined` the first capture fails.
template <class Graph>
void run(Graph& graph, fixture& fx, point throw_at, bool unjoined) {
  capture_nested(graph, fx, throw_at, unjoined, 3);
  replay_and_check(graph, fx, 3);
  step(phase::reset);
  graph.reset();
  capture_nested(graph, fx, point::none, false, 4);
  replay_and_check(graph, fx, 4);
  step(phase::teardown);
  graph = Graph{};
}

/// A clean capture and replay on the same graph object: the graph works again.
template <class Graph>
void recovers(Graph& graph, fixture& fx) {
  graph.reset();
  capture_nested(graph, fx, point::none, false, 5);
  std::fill(fx.host.begin(), fx.host.end(), 0);
  graph.replay(fx.stream);
  CUDA_REQUIRE(cudaStreamSynchronize(fx.stream));
  CHECK(fx.host == std::vector<unsigned char>(bytes, 5));
}

/// Failures a nested capture absorbs by design, each only in the steps its reason covers (the
/// capture then succeeds, or fails for the scenario's own reason).
template <class Graph>
std::vector<gcsweep::absorption> absorptions() {
  std::vector<gcsweep::absorption> rules{
      {"cudaStreamEndCapture", phases(phase::capture),
       "a body's end that fails with its capture still running is tried again (a failed end "
       "would cost the body graph); the outermost end (capture end) must surface"},
      {"cudaStreamGetCaptureInfo", phases(phase::capture),
       "a body's end asks the body stream's capture status again when CUDA cannot say"},
      {"cudaGraphGetNodes", phases(phase::capture),
       "a body's end looks for forked work left unjoined; not known, it asks again"},
      {"cudaGraphGetEdges", phases(phase::capture), "as cudaGraphGetNodes"},
      {"cudaStreamDestroy", phases(phase::capture, phase::teardown),
       "teardown never throws: a body's stream, destroyed when its capture has ended"},
      {"cudaGraphDestroy", phases(phase::capture_end, phase::reset, phase::teardown),
       "teardown never throws: the template, destroyed with reset or the graph"},
      {"cudaGraphExecDestroy", phases(phase::reset, phase::teardown), "teardown never throws"},
      {"cudaThreadExchangeStreamCaptureMode",
       phases(phase::capture, phase::capture_end, phase::reset, phase::teardown),
       "the relaxed capture-mode guard (body streams, slabs, instantiation, destruction): if "
       "the exchange fails, the call runs in the thread's mode"},
      {"cuPointerGetAttribute", phases(phase::replay),
       "liveness::check: a buffer-id query before a replay that fails once is asked again"},
  };
  if constexpr (std::is_same_v<typename Graph::pool_type, gc::pool::shared>) {
    rules.push_back({"cudaMalloc", phases(phase::reset, phase::teardown),
                     "a give-back to the shared pool waits for the device with a probe slab (no "
                     "completion marker, #48): if none can be made, cudaDeviceSynchronize waits "
                     "instead"});
    rules.push_back({"cudaFree", phases(phase::reset, phase::teardown),
                     "that probe slab's free, tried again if it fails"});
    rules.push_back({"cudaGetDevice", phases(phase::reset, phase::teardown),
                     "the current device that wait would switch back to: the current one"});
    rules.push_back({"cudaFreeAsync", phases(phase::teardown),
                     "a slab whose stream-ordered free fails is freed with cudaFree"});
  }
  if constexpr (std::is_same_v<typename Graph::pool_type, gc::pool::private_pool>) {
    rules.push_back({"cudaFree", phases(phase::reset, phase::teardown),
                     "a private pool's slabs go back with cudaFree; a failed one leaks its slab"});
  }
  if constexpr (Graph::pool_type::can_allocate) {
    rules.push_back({"cudaGetDevice", phases(phase::capture),
                     "the device a pool notes with its first slab: the current one"});
  }
  for (gcsweep::absorption& rule : gcsweep::policy_absorptions<Graph>::rules()) {
    rules.push_back(rule);
  }
  return rules;
}

/// One case: a fresh double, the scenario with `failing`'s call failing (none: no function)
/// and the user's exception at `throw_at`; then every check of the header comment.
template <class Graph>
void one_case(const gcsweep::call& failing, point throw_at, bool unjoined) {
  using kind = gcsweep::outcome::kind;
  const std::string& function = failing.function;
  cuda_double::reset();
  const std::size_t streams_kept = gc::detail::control_flow::body_stream_lease::streams_kept();
  const std::size_t graphs_kept = gc::detail::control_flow::graphs_kept().load();
  {
    fixture fx;
    Graph graph;
    if (!function.empty()) {
      cuda_double::fail_call(function.c_str(), gcsweep::injected, static_cast<int>(failing.nth));
    }
    const gcsweep::outcome failed = gcsweep::attempt([&] { run(graph, fx, throw_at, unjoined); });
    INFO("outcome: " << failed.type << " " << failed.message);
    gcsweep::print(unjoined ? "nested, unjoined" : "nested", failing, failed);
    switch (failed.what) {
    case kind::success: {
      CHECK(!unjoined);
      CHECK(throw_at == point::none);
      const std::vector<gcsweep::absorption> rules = absorptions<Graph>();
      CHECK(gcsweep::absorbed_by(rules, function, failing.where) != nullptr);
      break;
    }
    case kind::user_exception:
      CHECK(throw_at != point::none);
      break;
    case kind::graphcap_error:
      if (failed.code == gcsweep::injected && !failed.call.empty()) {
        CHECK(failed.call.rfind(function, 0) == 0); // the error names the call that failed
      }
      break;
    case kind::own_failure:
      break;
    case kind::broken:
    case kind::other:
      FAIL("an untyped exception, or a broken scenario: " << failed.message);
    }
    CHECK_FALSE(gctest::capturing(fx.stream));
    CHECK_FALSE(gctest::capturing(fx.side));
    gctest::require_no_last_error();
    CHECK(cuda_double::violations().empty());
    if (failed.what != kind::success && (failing.where == phase::capture || function.empty())) {
      CHECK(graph.empty());
    }
    recovers(graph, fx);
    CHECK(cuda_double::violations().empty());
    gcsweep::policy_absorptions<Graph>::check_case();
  }
  gcsweep::check_nothing_left(
      function,
      {.streams = gc::detail::control_flow::body_stream_lease::streams_kept() - streams_kept,
       .graphs = gc::detail::control_flow::graphs_kept().load() - graphs_kept,
       .malloced_slabs = std::is_same_v<typename Graph::pool_type, gc::pool::private_pool>});
}

struct sweep_counts {
  std::size_t injections = 0;
  std::size_t throws = 0;
};

template <class Graph>
sweep_counts sweep(bool unjoined) {
  sweep_counts counts;
  const auto record = [&] {
    cuda_double::reset();
    fixture fx;
    Graph graph;
    gcsweep::recorder recorder;
    const gcsweep::outcome clean = gcsweep::attempt([&] { run(graph, fx, point::none, unjoined); });
    CHECK(clean.what ==
          (unjoined ? gcsweep::outcome::kind::graphcap_error : gcsweep::outcome::kind::success));
    return recorder.finish();
  };
  counts.injections = gcsweep::sweep_calls(record, [&](const gcsweep::call& failing) {
    one_case<Graph>(failing, point::none, unjoined);
  });
  for (int at = 0; at < static_cast<int>(point::count); ++at) {
    INFO("the user's exception at point " << at);
    one_case<Graph>({}, static_cast<point>(at), unjoined);
    ++counts.throws;
  }
  cuda_double::reset();
  return counts;
}

/// Both scenarios for `Graph`; prints how many cases each ran.
template <class Graph>
void sweep_both(const char* name) {
  const sweep_counts joined = sweep<Graph>(false);
  const sweep_counts unjoined = sweep<Graph>(true);
  std::printf("nested fault sweep, %s: %zu injected failures and %zu throws with the fork "
              "joined, %zu and %zu with a body left unjoined\n",
              name, joined.injections, joined.throws, unjoined.injections, unjoined.throws);
  CHECK(joined.injections >= 30);
  CHECK(unjoined.injections >= 30);
}

} // namespace nested_sweep
