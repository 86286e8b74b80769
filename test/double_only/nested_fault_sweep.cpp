// The nested fault sweep (the reliability issue): a capture of depth 3 (an if_ whose body
// allocates from the pool and holds a while_ whose body forks to another stream and joins back,
// and an if_ whose body forks and does not join), with every CUDA call graphcap and the test
// issue failing in turn (each ordinal of each function, as in fault_sweep.cpp), and with a user
// exception thrown at each point of the work. For every case:
//  - a typed graphcap error, or the user's exception (or the test's own failed call) unchanged;
//  - no stream the test owns left capturing, CUDA's last error clear;
//  - no violation recorded by the double (what the H200 would not survive: a body graph
//    destroyed twice, a capture into a destroyed body ended);
//  - the same graph object captures and replays again;
//  - once everything is destroyed, the double holds nothing but what graphcap keeps on purpose
//    (body streams and outermost graphs after CUDA destroyed a body: docs/reliability.md) and
//    the one object of a failed destroy.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gc = graphcap;
using gctest::own;
using gctest::own_call_failed;

namespace {

constexpr std::size_t bytes = 256;
constexpr cudaError_t injected = cudaErrorUnknown;

struct user_exception {};

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
  end,
  count
};

/// The depth-3 capture. `unjoined`: the second if_ body forks to the side stream and returns
/// without joining (a capture_error even when nothing else fails).
template <class Graph>
void capture_nested(Graph& graph, fixture& fx, point throw_at, bool unjoined, int value) {
  const auto at = [&](point here) {
    if (here == throw_at) {
      throw user_exception{};
    }
  };
  graph.capture(fx.stream, [&](auto& cap) {
    at(point::start);
    own(cudaMemsetAsync(fx.device, value, bytes, cap.stream()), "memset");
    cap.if_(cap.condition(1), [&](auto& body) {
      at(point::if_body);
      if constexpr (Graph::pool_type::can_allocate) {
        unsigned char* block = body.template allocate<unsigned char>(64);
        own(cudaMemsetAsync(block, 0, 64, body.stream()), "memset of a pool block");
      }
      body.while_(body.condition(0), [&](auto& inner) {
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
      body.if_(body.condition(0), [&](auto& second) {
        at(point::unjoined_body);
        if (unjoined) {
          own(cudaEventRecord(fx.fork, second.stream()), "fork record");
          own(cudaStreamWaitEvent(fx.side, fx.fork, 0), "fork wait");
          own(cudaMemsetAsync(fx.device, value, 1, fx.side), "memset on the side stream");
        }
      });
    });
    at(point::end);
    own(cudaMemcpyAsync(fx.host.data(), fx.device, bytes, cudaMemcpyDeviceToHost, cap.stream()),
        "copy to the host");
  });
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

enum class outcome { success, graphcap_error, user_exception, own_failure, other };

struct result {
  outcome what = outcome::success;
  std::string message;
};

template <class Work>
result attempt(Work&& work) {
  try {
    work();
  } catch (const gc::error& failure) {
    return {outcome::graphcap_error, failure.what()};
  } catch (const user_exception&) {
    return {outcome::user_exception, "the user's exception"};
  } catch (const own_call_failed& failure) {
    return {outcome::own_failure, failure.what()};
  } catch (const std::exception& failure) {
    return {outcome::other, failure.what()};
  } catch (...) {
    return {outcome::other, "an exception of unknown type"};
  }
  return {};
}

/// Failures a nested capture absorbs by design (the capture then succeeds, or fails for the
/// scenario's own reason): teardown never throws; the capture-mode guard cannot; graphcap asks
/// again when a query of a body's capture, or a body's end, fails with the capture still running
/// (ending it blind could cost the body graph). The last cudaStreamEndCapture of a clean run is
/// the outermost capture's: that one must surface.
bool absorbed(std::string_view function, std::size_t nth, std::size_t count) {
  if (function == "cudaStreamEndCapture") {
    return nth < count;
  }
  return function == "cudaGraphDestroy" || function == "cudaGraphExecDestroy" ||
         function == "cudaStreamDestroy" || function == "cudaEventDestroy" ||
         function == "cudaFree" || function == "cudaFreeAsync" ||
         function == "cudaDeviceSynchronize" || function == "cudaGetDevice" ||
         function == "cudaSetDevice" || function == "cudaMalloc" ||
         function == "cudaThreadExchangeStreamCaptureMode" || function == "cudaGetLastError" ||
         function == "cudaStreamIsCapturing" || function == "cudaStreamGetCaptureInfo" ||
         function == "cudaGraphGetNodes" || function == "cudaGraphGetEdges" ||
         function == "cudaStreamWaitEvent" || function == "cudaEventCreateWithFlags" ||
         function == "cudaEventRecord";
}

struct sweep_counts {
  std::size_t injections = 0;
  std::size_t throws = 0;
};

/// One case: a fresh double, the capture with `function`'s nth call failing (or none), and the
/// user's exception at `throw_at`; then every check of the header comment.
template <class Graph>
void one_case(const std::string& function, std::size_t nth, std::size_t count, point throw_at,
              bool unjoined) {
  cuda_double::reset();
  const std::size_t streams_kept = gc::detail::body_stream_lease::streams_kept();
  const std::size_t graphs_kept = gc::detail::graphs_kept().load();
  {
    fixture fx;
    Graph graph;
    if (!function.empty()) {
      cuda_double::fail_call(function.c_str(), injected, static_cast<int>(nth));
    }
    const result failed = attempt([&] { capture_nested(graph, fx, throw_at, unjoined, 3); });
    INFO("outcome: " << failed.message);
    switch (failed.what) {
    case outcome::success:
      CHECK(!unjoined);
      CHECK(throw_at == point::none);
      CHECK(absorbed(function, nth, count));
      break;
    case outcome::user_exception:
      CHECK(throw_at != point::none);
      break;
    case outcome::graphcap_error:
    case outcome::own_failure:
      break;
    case outcome::other:
      FAIL("an untyped exception: " << failed.message);
    }
    CHECK_FALSE(gctest::capturing(fx.stream));
    CHECK_FALSE(gctest::capturing(fx.side));
    gctest::require_no_last_error();
    CHECK(cuda_double::violations().empty());
    if (failed.what != outcome::success) {
      CHECK(graph.empty());
    }
    recovers(graph, fx);
    CHECK(cuda_double::violations().empty());
  }
  const gctest::live_objects left;
  const std::size_t kept_streams = gc::detail::body_stream_lease::streams_kept() - streams_kept;
  const std::size_t kept_graphs = gc::detail::graphs_kept().load() - graphs_kept;
  const auto failed_destroy = [&](const char* destroy) { return function == destroy ? 1U : 0U; };
  CHECK(left.streams <= kept_streams + failed_destroy("cudaStreamDestroy"));
  CHECK(left.events <= failed_destroy("cudaEventDestroy"));
  CHECK(left.graphs <= kept_graphs + failed_destroy("cudaGraphDestroy"));
  CHECK(left.execs <= failed_destroy("cudaGraphExecDestroy"));
  CHECK(left.allocations <= failed_destroy("cudaFree"));
}

template <class Graph>
sweep_counts sweep(bool unjoined) {
  sweep_counts counts;
  // The calls of a clean run, on a fresh double (a warm-up run first: process-wide first use).
  std::map<std::string, std::size_t> calls;
  for (int run = 0; run < 2; ++run) {
    cuda_double::reset();
    fixture fx;
    Graph graph;
    cuda_double::clear_call_counts();
    static_cast<void>(attempt([&] { capture_nested(graph, fx, point::none, unjoined, 3); }));
    calls = cuda_double::call_counts();
  }
  for (const auto& [function, count] : calls) {
    for (std::size_t nth = 1; nth <= count; ++nth) {
      INFO(function << " fails at its call " << nth << " of " << count);
      one_case<Graph>(function, nth, count, point::none, unjoined);
      ++counts.injections;
    }
  }
  for (int at = 0; at < static_cast<int>(point::count); ++at) {
    INFO("the user's exception at point " << at);
    one_case<Graph>("", 0, 0, static_cast<point>(at), unjoined);
    ++counts.throws;
  }
  cuda_double::reset();
  return counts;
}

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

} // namespace

TEST_CASE("nested fault sweep: graph (private pool)") {
  sweep_both<gc::graph>("graph");
}

TEST_CASE("nested fault sweep: shared pool") {
  sweep_both<gc::graph_with<gc::pool::shared>>("shared pool");
}

TEST_CASE("nested fault sweep: lean_graph") {
  sweep_both<gc::lean_graph>("lean_graph");
}
