// Stress tests (docs/reliability.md), on the GPU and on the CUDA test double:
//  - failed captures (an exception in the body, an illegal call that invalidates the capture, an
//    unjoined fork), each followed by a capture that works, leave no pool memory, stream, event
//    or graph behind;
//  - 8 threads each capture and replay their own graphs at once, under mode::thread_local_,
//    while allocating outside their captures;
//  - 1000 different graphs replayed interleaved, on two streams.
// GRAPHCAP_STRESS_SCALE (default 1) multiplies the sizes: 1 keeps CI fast (1000 failed
// captures); the H200 run uses 10 (10,000 failed captures); a fraction (0.05) shrinks every
// count, the number of interleaved graphs too, for slow tools such as racecheck.
// Leaks are measured with the double's live-object counters, and on both backends with
// cudaMemGetInfo and the pools' statistics.
// The capture bodies open annotation scopes (cap.mark), which cost nothing with annot::off, so
// that annotated configurations can join these loops unchanged.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "stress_work.hpp"

#ifdef GRAPHCAP_STRESS_ON_DOUBLE
#include <cuda_double/control.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t n = 256; // ints per buffer

double scale() {
  const char* text = std::getenv("GRAPHCAP_STRESS_SCALE");
  const double value = text != nullptr ? std::strtod(text, nullptr) : 1.0;
  return value > 0.0 ? value : 1.0;
}

/// `count` at scale 1, scaled, at least `least`.
int scaled(int count, int least = 1) {
  return std::max(least, static_cast<int>(std::lround(count * scale())));
}

std::vector<int> read_back(const int* device, std::size_t count) {
  std::vector<int> host(count, -1);
  CUDA_REQUIRE(cudaMemcpy(host.data(), device, count * sizeof(int), cudaMemcpyDeviceToHost));
  return host;
}

/// What a leak would grow: free device memory (both backends) and, on the double, its live
/// objects.
struct footprint {
  std::size_t free_bytes = 0;
#ifdef GRAPHCAP_STRESS_ON_DOUBLE
  std::size_t streams = cuda_double::live_streams();
  std::size_t events = cuda_double::live_events();
  std::size_t graphs = cuda_double::live_graphs();
  std::size_t execs = cuda_double::live_execs();
  std::size_t allocations = cuda_double::live_allocations();
#endif
};

footprint measure() {
  // Stream-ordered frees reach the device's memory pool once the device is idle; the pool then
  // releases them (release threshold 0).
  CUDA_REQUIRE(cudaDeviceSynchronize());
  footprint now;
  std::size_t total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&now.free_bytes, &total));
  return now;
}

void require_no_growth(const footprint& before, const footprint& after) {
  const std::size_t grown =
      before.free_bytes > after.free_bytes ? before.free_bytes - after.free_bytes : 0;
  INFO("device memory grown by " << grown << " bytes");
  CHECK(grown <= std::size_t{4} << 20); // two allocation granules of slack, not one per loop
#ifdef GRAPHCAP_STRESS_ON_DOUBLE
  CHECK(after.streams == before.streams);
  CHECK(after.events == before.events);
  CHECK(after.graphs == before.graphs);
  CHECK(after.execs == before.execs);
  CHECK(after.allocations == before.allocations);
#endif
}

struct body_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace

TEST_CASE("failed captures leave nothing behind and the next capture works",
          "[stress][failed_captures]") {
  using stress_graph = gc::graph;       // global mode, private pool
  const int failures = scaled(1000, 3); // each of the 3 kinds at least once
  gctest::stream side;
  gctest::event fork;
  gctest::device_buffer<int> data(n);
  CUDA_REQUIRE(cudaMemset(data.get(), 0, data.bytes()));
  stress_graph graph;
  int expected = 0;

  const auto capture_that_works = [&] {
    graph.capture([&](stress_graph::scope& cap) {
      auto region = cap.mark("works");
      int* scratch = cap.allocate<int>(n);
      CUDA_REQUIRE(cudaMemsetAsync(scratch, 0, n * sizeof(int), cap.stream()));
      gcstress::launch_add(cap.stream(), scratch, 1, n);
      gcstress::launch_add(cap.stream(), data.get(), 1, n);
    });
    graph.replay(side);
    ++expected;
    graph.reset();
  };

  // One failure of each kind; returns what it threw, or a description of what went wrong.
  const auto fail = [&](int kind) -> std::string {
    try {
      graph.capture([&](stress_graph::scope& cap) {
        auto region = cap.mark("fails");
        int* scratch = cap.allocate<int>(n);
        gcstress::launch_add(cap.stream(), scratch, 1, n);
        if (kind == 0) {
          throw body_failure("the capture body throws");
        }
        if (kind == 1) { // cudaMalloc during a global-mode capture invalidates it
          void* memory = nullptr;
          if (cudaMalloc(&memory, 256) == cudaSuccess) {
            static_cast<void>(cudaFree(memory));
            throw std::logic_error("cudaMalloc succeeded during a global-mode capture");
          }
          static_cast<void>(cudaGetLastError());
        }
        if (kind == 2) { // work forked to `side` and never joined back
          int* forked = cap.allocate<int>(n, side);
          CUDA_REQUIRE(cudaEventRecord(fork, cap.stream()));
          CUDA_REQUIRE(cudaStreamWaitEvent(side, fork, 0));
          gcstress::launch_add(side, forked, 1, n);
        }
      });
      return "the capture did not fail";
    } catch (const body_failure&) {
      return kind == 0 ? "" : "the body's exception for the wrong kind";
    } catch (const gc::capture_error& failure) {
      const cudaError_t wanted =
          kind == 1 ? cudaErrorStreamCaptureInvalidated : cudaErrorStreamCaptureUnjoined;
      return kind != 0 && failure.code() == wanted ? "" : failure.what();
    }
  };

  const auto check_clean = [&](int iteration) {
    INFO("after failed capture " << iteration);
    REQUIRE(graph.empty());
    REQUIRE_FALSE(gctest::capturing(side));
    const gc::pool_statistics pool = graph.pool_statistics();
    REQUIRE(pool.blocks_in_use == 0);
    REQUIRE(pool.reserved_bytes == 0);
    gctest::require_no_last_error();
  };

  for (int kind = 0; kind < 3; ++kind) { // warm-up: the side stream, the runtime's own state
    REQUIRE(fail(kind).empty());
    capture_that_works();
  }
  const footprint before = measure();
  for (int i = 0; i < failures; ++i) {
    const std::string problem = fail(i % 3);
    if (!problem.empty()) {
      INFO("failed capture " << i << " (kind " << i % 3 << ")");
      FAIL(problem);
    }
    check_clean(i);
    capture_that_works();
  }
  CUDA_REQUIRE(cudaStreamSynchronize(side));
  const std::vector<int> values = read_back(data.get(), n);
  CHECK(std::all_of(values.begin(), values.end(), [&](int value) { return value == expected; }));
  require_no_growth(before, measure());
  gcstress::release_work();
}

TEST_CASE("8 threads capture and replay their own graphs at once under mode thread_local_",
          "[stress][threads]") {
  using thread_graph = gc::graph_with<gc::mode::thread_local_, gc::pool::private_pool>;
  constexpr int thread_count = 8;
  constexpr int replays = 3;
  const int iterations = scaled(100, 10);               // a replacement every tenth
  gctest::device_buffer<int> buffers(thread_count * n); // n ints per thread
  CUDA_REQUIRE(cudaMemset(buffers.get(), 0, buffers.bytes()));
  std::vector<std::string> problems(thread_count); // Catch2 assertions are not thread-safe
  std::atomic<int> ready{0};

  const auto worker = [&](int t) {
    std::string& problem = problems[t];
    const auto fail = [&](std::string what) {
      if (problem.empty()) {
        problem = std::move(what);
      }
    };
    int* data = buffers.get() + t * n;
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
      fail("cudaStreamCreateWithFlags failed");
      return;
    }
    ++ready;
    while (ready.load() < thread_count) { // start together, so that captures overlap
      std::this_thread::yield();
    }
    int expected = 0;
    {
      thread_graph graph;
      for (int i = 0; i < iterations && problem.empty(); ++i) {
        try {
          if (i % 10 == 9) {
            graph = thread_graph{}; // a new graph now and then: teardown during others' captures
          }
          graph.capture(stream, [&](thread_graph::scope& cap) {
            auto region = cap.mark("thread");
            int* scratch = cap.allocate<int>(n);
            if (cudaMemsetAsync(scratch, 0, n * sizeof(int), cap.stream()) != cudaSuccess) {
              throw std::runtime_error("cudaMemsetAsync in the capture failed");
            }
            gcstress::launch_add(cap.stream(), scratch, t + 1, n);
            gcstress::launch_add(cap.stream(), data, t + 1, n);
          });
          // Outside this thread's capture, but during other threads' captures: allowed under
          // mode::thread_local_.
          void* memory = nullptr;
          if (cudaMalloc(&memory, 1024) != cudaSuccess || cudaFree(memory) != cudaSuccess) {
            fail("cudaMalloc/cudaFree outside the capture failed at iteration " +
                 std::to_string(i));
          }
          for (int r = 0; r < replays; ++r) {
            graph.replay(stream);
          }
          expected += replays * (t + 1);
          int first = -1;
          if (cudaMemcpyAsync(&first, data, sizeof first, cudaMemcpyDeviceToHost, stream) !=
                  cudaSuccess ||
              cudaStreamSynchronize(stream) != cudaSuccess) {
            fail("reading the result back failed");
          } else if (first != expected) {
            fail("iteration " + std::to_string(i) + ": read " + std::to_string(first) +
                 ", expected " + std::to_string(expected));
          }
          graph.reset();
        } catch (const std::exception& failure) {
          fail("iteration " + std::to_string(i) + ": " + failure.what());
        }
      }
    }
    static_cast<void>(cudaStreamSynchronize(stream));
    static_cast<void>(cudaStreamDestroy(stream));
  };

  { // warm-up, so that the runtime's lazily created state is not counted as a leak
    thread_graph graph;
    graph.capture([&](thread_graph::scope& cap) {
      CUDA_REQUIRE(cudaMemsetAsync(cap.allocate<int>(n), 0, n * sizeof(int), cap.stream()));
    });
    graph.replay(cudaStreamPerThread);
    CUDA_REQUIRE(cudaStreamSynchronize(cudaStreamPerThread));
  }
  const auto run_threads = [&] {
    CUDA_REQUIRE(cudaMemset(buffers.get(), 0, buffers.bytes()));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    ready = 0;
    std::vector<std::thread> threads;
    threads.reserve(thread_count);
    for (int t = 0; t < thread_count; ++t) {
      threads.emplace_back(worker, t);
    }
    for (std::thread& thread : threads) {
      thread.join();
    }
  };
  // A first round warms up what the runtime creates per thread and per stream (seen on the
  // H200: about 6 MiB for 8 threads, kept after they end); leaks show up in the second round.
  run_threads();
  const footprint before = measure();
  run_threads();
  for (int t = 0; t < thread_count; ++t) {
    INFO("thread " << t);
    CHECK(problems[t] == std::string{});
    const std::vector<int> values = read_back(buffers.get() + t * n, n);
    const int expected = iterations * replays * (t + 1);
    CHECK(std::count(values.begin(), values.end(), expected) == static_cast<long>(n));
  }
  require_no_growth(before, measure());
  gcstress::release_work();
}

TEST_CASE("1000 different graphs replayed interleaved on two streams", "[stress][interleaved]") {
  // Each graph draws a scratch block from one shared pool and adds its own value to its own
  // slot, a different number of times: 1000 different graphs. A graph always replays on the
  // same stream, so no graph runs concurrently with itself.
  using interleaved_graph = gc::graph_with<gc::pool::shared>;
  const int graph_count = std::min(1000, scaled(1000, 8));
  const int rounds = scaled(3);
  gctest::stream streams[2];
  gctest::device_buffer<int> slots(graph_count);
  const auto adds_of = [](int i) { return 1 + i % 4; };

  const auto run = [&] {
    CUDA_REQUIRE(cudaMemset(slots.get(), 0, slots.bytes()));
    const gc::pool_handle pool = gc::graph_pool_handle();
    std::vector<interleaved_graph> graphs;
    graphs.reserve(graph_count);
    for (int i = 0; i < graph_count; ++i) {
      graphs.emplace_back(pool);
      graphs.back().capture(streams[i % 2], [&](interleaved_graph::scope& cap) {
        auto region = cap.mark("interleaved");
        CUDA_REQUIRE(cudaMemsetAsync(cap.allocate<int>(4), 0, 4 * sizeof(int), cap.stream()));
        for (int k = 0; k < adds_of(i); ++k) {
          gcstress::launch_add(cap.stream(), slots.get() + i, i + 1, 1);
        }
      });
      REQUIRE(graphs.back().node_count() == static_cast<std::size_t>(1 + adds_of(i)));
    }
    CHECK(pool.statistics().blocks_in_use == static_cast<std::size_t>(graph_count));
    std::vector<int> order(graph_count);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 shuffle(20261129); // a fixed seed: the same interleaving on every run
    for (int round = 0; round < rounds; ++round) {
      std::shuffle(order.begin(), order.end(), shuffle);
      for (const int i : order) {
        graphs[i].replay(streams[i % 2]);
      }
    }
    streams[0].synchronize();
    streams[1].synchronize();
    const std::vector<int> values = read_back(slots.get(), graph_count);
    int wrong = 0;
    for (int i = 0; i < graph_count; ++i) {
      wrong += values[i] == (i + 1) * adds_of(i) * rounds ? 0 : 1;
    }
    CHECK(wrong == 0);
  };

  run(); // warm-up
  const footprint before = measure();
  run();
  require_no_growth(before, measure());
  gcstress::release_work();
}
