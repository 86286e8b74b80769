// Soak (docs/reliability.md), label `soak`, on the GPU and on the CUDA test double: for the lean
// graph, for each policy switched on alone, and for all of them together,
//  - one graph replayed one million times, and
//  - 100,000 cycles of capture, replay and destruction of a new graph,
// after which the process's host memory (resident set) and the device's memory in use may have
// grown by less than 1 MiB since the end of a warm-up. GRAPHCAP_SOAK_SCALE multiplies both
// counts: 1 is the full run (the H200's, scripts/gpu-suite.sh); CTest's default is 0.002 (2,000
// replays and 200 cycles per configuration), which keeps CI fast and still runs every path.
// Each captured graph allocates scratch from its pool (where it has one), opens an annotation
// scope and declares its input, so that every policy has work in every cycle.
#include <graphcap/graphcap.hpp>
#ifdef GRAPHCAP_SOAK_ANNOTATIONS
#include <graphcap/annotations.hpp>
#endif

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "stress_work.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t n = 256; // ints per buffer
constexpr std::size_t allowed_growth = std::size_t{1} << 20;

double scale() {
  const char* text = std::getenv("GRAPHCAP_SOAK_SCALE");
  const double value = text != nullptr ? std::strtod(text, nullptr) : 0.002;
  return value > 0.0 ? value : 0.002;
}

long long scaled(long long count, long long least) {
  return std::max(least,
                  static_cast<long long>(std::llround(static_cast<double>(count) * scale())));
}

/// The process's resident memory, from /proc/self/statm (its second field, in pages).
std::size_t resident_bytes() {
  std::ifstream statm{"/proc/self/statm"};
  std::size_t size_pages = 0;
  std::size_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  REQUIRE(statm);
  return resident_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

/// Device memory in use (total minus free), once every stream-ordered free has landed.
std::size_t device_bytes_in_use() {
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  return total - free_bytes;
}

struct footprint {
  std::size_t host = resident_bytes();
  std::size_t device = device_bytes_in_use();
};

std::size_t grown(std::size_t before, std::size_t after) {
  return after > before ? after - before : 0;
}

/// The capture every configuration makes: scratch from the pool (where there is one), a scope,
/// the input declared (liveness), and two launches.
template <class Graph>
void capture_step(Graph& graph, cudaStream_t stream, int* data) {
  graph.capture(stream, [&](typename Graph::scope& cap) {
    auto region = cap.mark("soak step");
    if constexpr (Graph::pool_type::can_allocate) {
      int* scratch = cap.template allocate<int>(n);
      CUDA_REQUIRE(cudaMemsetAsync(scratch, 0, n * sizeof(int), cap.stream()));
      gcstress::launch_add(cap.stream(), scratch, 1, n);
    }
    cap.input(data); // liveness::off: a no-op
    gcstress::launch_add(cap.stream(), data, 1, n);
  });
}

/// Replays one graph `replays` times, then makes, replays and destroys `cycles` graphs; returns
/// the growth of host and device memory over both loops, after a warm-up of each.
template <class Graph, class MakeGraph>
void soak(const char* configuration, MakeGraph make_graph) {
  const long long replays = scaled(1'000'000, 1000);
  const long long cycles = scaled(100'000, 100);
  const long long warm_up = std::max(20LL, cycles / 50);
  INFO(configuration << ": " << replays << " replays, " << cycles << " cycles");
  gctest::stream stream;
  gctest::device_buffer<int> data(n);
  CUDA_REQUIRE(cudaMemset(data.get(), 0, data.bytes()));

  const auto cycle = [&] {
    Graph graph = make_graph();
    capture_step(graph, stream, data.get());
    graph.replay(stream);
  };
  for (long long i = 0; i < warm_up; ++i) { // first-use state: the runtime's, the allocator's
    cycle();
  }
  stream.synchronize();
  gcstress::release_work();
  {
    Graph graph = make_graph();
    capture_step(graph, stream, data.get());
    for (long long i = 0; i < warm_up; ++i) {
      graph.replay(stream);
    }
    stream.synchronize();
  }
  gcstress::release_work();
  const footprint before;

  {
    Graph graph = make_graph();
    capture_step(graph, stream, data.get());
    for (long long i = 0; i < replays; ++i) {
      graph.replay(stream);
      if (i % 10'000 == 9'999) {
        stream.synchronize(); // a bounded launch queue: the device keeps up
      }
    }
    stream.synchronize();
  }
  gcstress::release_work();
  const footprint after_replays;

  for (long long i = 0; i < cycles; ++i) {
    cycle();
    if (i % 1'000 == 999) {
      stream.synchronize();
      gcstress::release_work(); // the double's host-function arguments of the destroyed graphs
    }
  }
  stream.synchronize();
  gcstress::release_work();
  const footprint after_cycles;

  const std::size_t host_growth = grown(before.host, after_cycles.host);
  const std::size_t device_growth = grown(before.device, after_cycles.device);
  std::printf("soak %-28s %9lld replays, %7lld cycles: host +%zu B (after replays +%zu B), "
              "device +%zu B\n",
              configuration, replays, cycles, host_growth, grown(before.host, after_replays.host),
              device_growth);
  INFO("host memory grown by " << host_growth << " bytes, device memory by " << device_growth);
  CHECK(host_growth < allowed_growth);
  CHECK(device_growth < allowed_growth);
}

} // namespace

TEST_CASE("soak: the lean graph", "[soak][lean]") {
  soak<gc::lean_graph>("lean_graph", [] { return gc::lean_graph{}; });
}

TEST_CASE("soak: pool::private_pool alone", "[soak][private_pool]") {
  using graph = gc::graph_with<gc::pool::private_pool>;
  soak<graph>("pool::private_pool", [] { return graph{}; });
}

TEST_CASE("soak: pool::shared alone", "[soak][shared_pool]") {
  using graph = gc::graph_with<gc::pool::shared>;
  const gc::pool_handle pool = gc::graph_pool_handle();
  soak<graph>("pool::shared", [&] { return graph{pool}; });
}

TEST_CASE("soak: liveness::check alone", "[soak][liveness]") {
  using graph = gc::graph_with<gc::liveness::check>;
  soak<graph>("liveness::check", [] { return graph{}; });
}

#ifdef GRAPHCAP_SOAK_ANNOTATIONS
TEST_CASE("soak: annot::on alone", "[soak][annotations]") {
  using graph = gc::graph_with<gc::annot::on>;
  soak<graph>("annot::on", [] { return graph{}; });
}

TEST_CASE("soak: every policy on together", "[soak][all]") {
  using graph = gc::graph_with<gc::pool::private_pool, gc::annot::on, gc::liveness::check>;
  soak<graph>("private_pool + annot + liveness", [] { return graph{}; });
}
#endif
