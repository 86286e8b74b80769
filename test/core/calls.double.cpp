// Tests that need the CUDA test double's control API: the exact CUDA calls graphcap makes.
// "Zero overhead" means a lean graph issues the calls a careful hand-written program issues.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "driver_testing.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace gc = graphcap;
using call_map = std::map<std::string, std::size_t>;

namespace {
void CUDART_CB add_one(void* counter) {
  ++*static_cast<int*>(counter);
}
} // namespace

TEST_CASE("a lean replay is exactly one cudaGraphLaunch") {
  cuda_double::reset();
  gctest::stream stream;
  int counter = 0;
  gc::lean_graph graph;
  graph.capture(stream, [&] { CUDA_REQUIRE(cudaLaunchHostFunc(stream, add_one, &counter)); });
  cuda_double::clear_call_counts();
  graph.replay(stream);
  CHECK(cuda_double::call_counts() == call_map{{"cudaGraphLaunch", 1}});
  CHECK(counter == 1);
}

TEST_CASE("a capture makes the hand-written calls, plus the device it records") {
  cuda_double::reset();
  gctest::stream stream;
  gc::lean_graph graph;
  cuda_double::clear_call_counts();
  graph.capture(stream, [](cudaStream_t) {});
  // Hand-written: begin, end, instantiate, destroy the template. graphcap adds cudaGetDevice
  // (the capture device) and, around instantiation, the relaxed capture-mode exchange (2 calls)
  // that keeps it from invalidating another thread's global-mode capture. It counts no nodes
  // and destroys no template at the capture's end: node_count() counts when it is read, and the
  // template goes with reset() or the graph.
  CHECK(cuda_double::call_counts() == call_map{{"cudaGetDevice", 1},
                                               {"cudaStreamBeginCapture", 1},
                                               {"cudaStreamEndCapture", 1},
                                               {"cudaThreadExchangeStreamCaptureMode", 2},
                                               {"cudaGraphInstantiateWithFlags", 1}});
}

TEST_CASE("node_count() counts the template once, at its first call after a capture") {
  cuda_double::reset();
  gctest::stream stream;
  int counter = 0;
  {
    gc::lean_graph graph;
    graph.capture(stream, [&](cudaStream_t s) {
      CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
      CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
    });
    CHECK(cuda_double::live_graphs() == 1);              // kept, out of reach, for the count
    CHECK_THROWS_AS(graph.raw_graph(), gc::state_error); // still no template for the user
    cuda_double::clear_call_counts();
    CHECK(graph.node_count() == 2);
    CHECK(graph.node_count() == 2);
    CHECK(cuda_double::call_counts() == call_map{{"cudaGraphGetNodes", 1}});
    graph.replay(stream);
    CHECK(counter == 2);
    graph.reset();
    CHECK(graph.node_count() == 0);
    CHECK(cuda_double::live_graphs() == 0); // reset() destroys it
    graph.capture(stream,
                  [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter)); });
    CHECK(graph.node_count() == 1); // counted again for the new capture
  }
  CHECK(cuda_double::live_graphs() == 0); // and the graph's destructor
  CHECK(cuda_double::live_execs() == 0);
}

TEST_CASE("a recapture without keep_graph counts its own template, not the previous one") {
  cuda_double::reset();
  gctest::stream stream;
  int counter = 0;
  gc::lean_graph graph;
  graph.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter)); });
  CHECK(graph.node_count() == 1);
  const gc::update_result result = graph.recapture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter));
  });
  CHECK_FALSE(result.updated()); // another topology
  CHECK(cuda_double::live_graphs() == 1);
  CHECK(graph.node_count() == 2);
  graph.replay(stream);
  CHECK(counter == 2);
}

TEST_CASE("rejecting the legacy default stream makes no CUDA call at all") {
  cuda_double::reset();
  gc::lean_graph graph;
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(graph.begin_capture(cudaStreamLegacy), gc::capture_error);
  CHECK(cuda_double::call_counts().empty());
}

TEST_CASE("a state_error on replay before capture leaves no CUDA error behind") {
  cuda_double::reset();
  gc::lean_graph graph;
  CHECK_THROWS_AS(graph.replay(), gc::state_error);
  CHECK(cudaPeekAtLastError() == cudaSuccess);
}

TEST_CASE("the user's own pending CUDA error survives graphcap's checks") {
  cuda_double::reset();
  CHECK(cudaSetDevice(99) == cudaErrorInvalidDevice); // the user's error, not yet collected
  const cudaError_t users = cudaPeekAtLastError();
  REQUIRE(users != cudaSuccess);
  gc::lean_graph graph;
  CHECK_THROWS_AS(graph.begin_capture(cudaStreamLegacy), gc::capture_error);
  CHECK(cudaPeekAtLastError() == users);
  static_cast<void>(cudaGetLastError());
}

TEST_CASE("without a driver, the first capture throws cuda_error and nothing leaks") {
  cuda_double::reset();
  cuda_double::simulate_no_driver(true);
  {
    gc::lean_graph graph;
    CHECK_THROWS_WITH(graph.capture([](cudaStream_t) {}),
                      gctest::contains("cudaErrorInsufficientDriver"));
    CHECK(graph.empty());
  }
  cuda_double::simulate_no_driver(false);
  CHECK(cuda_double::live_streams() == 0);
  CHECK(cuda_double::live_graphs() == 0);
  CHECK(cuda_double::live_execs() == 0);
  cuda_double::reset();
}

TEST_CASE("teardown destroys exactly what was created") {
  cuda_double::reset();
  {
    gc::lean_graph graph{gc::keep_graph};
    graph.capture([](cudaStream_t) {});
    graph.instantiate();
    CHECK(cuda_double::live_graphs() == 1);
    CHECK(cuda_double::live_execs() == 1);
    CHECK(cuda_double::live_streams() == 1); // the side stream
  }
  CHECK(cuda_double::live_graphs() == 0);
  CHECK(cuda_double::live_execs() == 0);
  CHECK(cuda_double::live_streams() == 0);
}

TEST_CASE("a pool hit during capture makes no CUDA call") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph graph;
  graph.capture(stream, [&](gc::graph::scope& cap) {
    float* first = cap.allocate<float>(256); // grows the pool: CUDA calls
    cap.deallocate(first);
    float* small = cap.allocate<float>(16); // carved from the same slab
    cuda_double::clear_call_counts();
    float* again = cap.allocate<float>(256); // the freed block: a hit
    float* more = cap.allocate<float>(16);   // carved from the slab: also no call
    CHECK(cuda_double::call_counts().empty());
    CHECK(again == first);
    CHECK(more != small);
  });
}

TEST_CASE("growing the pool during a global capture does not invalidate it") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph graph; // mode::global
  REQUIRE_NOTHROW(graph.capture(stream, [&](gc::graph::scope& cap) {
    for (int i = 0; i < 3; ++i) { // three slabs: three cudaMallocAsync during the capture
      auto* block = cap.allocate<unsigned char>(3 * (std::size_t{1} << 20));
      CUDA_REQUIRE(cudaMemsetAsync(block, 0, 16, cap.stream()));
    }
  }));
  CHECK(graph.pool_statistics().slabs == 3);
}

TEST_CASE("a shared-pool graph has only its captured nodes, and its reset waits for the device "
          "before the next graph takes its block") {
  cuda_double::reset();
  gctest::stream stream;
  const auto pool = gc::graph_pool_handle();
  using shared_graph = gc::graph_with<gc::pool::shared>;
  auto capture_block = [&](shared_graph& graph) {
    return graph.capture(stream, [&](shared_graph::scope& cap) {
      auto* block = cap.allocate<unsigned char>(4096);
      CUDA_REQUIRE(cudaMemsetAsync(block, 1, 4096, cap.stream()));
      return block;
    });
  };
  shared_graph first{pool};
  cuda_double::clear_call_counts();
  auto* first_block = capture_block(first);
  // No completion marker: no event made, none recorded; a replay launches the memset alone.
  CHECK(cuda_double::call_counts().count("cudaEventCreateWithFlags") == 0);
  CHECK(cuda_double::call_counts().count("cudaEventRecordWithFlags") == 0);
  CHECK(first.node_count() == 1);
  cuda_double::clear_call_counts();
  first.replay(stream);
  CHECK(cuda_double::call_counts() == call_map{{"cudaGraphLaunch", 1}}); // nothing per replay
  cuda_double::clear_call_counts();
  first.reset(); // the handover rule: a wait for the device (a probe slab allocated and freed)
  const call_map reset_calls = cuda_double::call_counts();
  CHECK(reset_calls.at("cudaMalloc") == 1);
  CHECK(reset_calls.at("cudaFree") == 1);
  CHECK(reset_calls.count("cudaStreamWaitEvent") == 0);
  CHECK(reset_calls.count("cudaDeviceSynchronize") == 0); // it would fail while anything captures
  shared_graph second{pool};
  cuda_double::clear_call_counts();
  CHECK(capture_block(second) == first_block);
  CHECK(cuda_double::call_counts().count("cudaEventSynchronize") == 0); // waited at the reset
  CHECK(cuda_double::call_counts().count("cudaMalloc") == 0);
}

TEST_CASE("a give-back's wait for the device is not skipped when the probe slab cannot be made "
          "or freed") {
  // No completion marker orders the handover (#48): the wait at the give-back is all there is.
  // Without memory for the probe slab it waits with cudaDeviceSynchronize; a failed free of the
  // probe is tried again (the wait and the free both happen).
  using shared_graph = gc::graph_with<gc::pool::shared>;
  cuda_double::reset();
  gctest::stream stream;
  const auto pool = gc::graph_pool_handle();
  const std::size_t before = cuda_double::live_allocations();
  shared_graph graph{pool};
  graph.capture(stream, [&](shared_graph::scope& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(cap.allocate<unsigned char>(4096), 1, 4096, cap.stream()));
  });
  graph.replay(stream);
  SECTION("no memory for the probe") {
    cuda_double::fail_call("cudaMalloc", cudaErrorMemoryAllocation);
    cuda_double::clear_call_counts();
    graph.reset();
    CHECK(cuda_double::calls("cudaDeviceSynchronize") == 1);
  }
  SECTION("the probe's free fails once") {
    cuda_double::fail_call("cudaFree", cudaErrorUnknown);
    cuda_double::clear_call_counts();
    graph.reset();
    CHECK(cuda_double::calls("cudaFree") == 2);
    CHECK(cuda_double::calls("cudaDeviceSynchronize") == 0);
  }
  CHECK(cudaGetLastError() == cudaSuccess); // graphcap cleared what it handled
  CHECK(pool.statistics().blocks_in_use == 0);
  CHECK(cuda_double::live_allocations() >= before); // the pool's slab stays with the handle
}

TEST_CASE("a private pool adds no node, and its reset frees its slabs with cudaFree, which waits") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph graph;
  cuda_double::clear_call_counts();
  graph.capture(stream, [&](gc::graph::scope& cap) {
    auto* block = cap.allocate<unsigned char>(4096);
    CUDA_REQUIRE(cudaMemsetAsync(block, 1, 4096, cap.stream()));
  });
  // No completion marker: no event made, none recorded, the graph is the memset alone.
  CHECK(cuda_double::call_counts().count("cudaEventCreateWithFlags") == 0);
  CHECK(cuda_double::call_counts().count("cudaEventRecordWithFlags") == 0);
  CHECK(graph.node_count() == 1);
  graph.replay(stream);
  cuda_double::clear_call_counts();
  graph.reset();
  const call_map calls = cuda_double::call_counts();
  CHECK(calls.at("cudaFree") == 1);      // waits for the device: after the last replay
  CHECK(calls.count("cudaMalloc") == 0); // no probe: the slab's own cudaFree is the wait
  CHECK(calls.count("cudaFreeAsync") == 0);
  CHECK(calls.count("cudaStreamWaitEvent") == 0);
  CHECK(calls.count("cudaDeviceSynchronize") == 0); // it would fail while anything captures
}

TEST_CASE("memory nodes a replayed capture left allocated are freed on reset after a wait for "
          "the device that no other capture notices") {
  // A graph allocation's lifetime ends at its cudaFree, which does not wait for a replay still
  // using it (probe graph_memory_free): the wait is an ordinary cudaFree's (of a one-byte
  // sentinel), which another stream's capture allows, where cudaDeviceSynchronize would
  // invalidate it.
  using nodes_graph = gc::graph_with<gc::pool::graph_memory_nodes>;
  cuda_double::reset();
  gctest::stream stream;
  gctest::stream other;
  const std::size_t before = cuda_double::live_allocations();
  nodes_graph graph;
  graph.capture(stream, [&](nodes_graph::scope& cap) {
    auto* kept = cap.allocate<unsigned char>(4096);
    auto* freed = cap.allocate<unsigned char>(4096);
    CUDA_REQUIRE(cudaMemsetAsync(kept, 1, 4096, cap.stream()));
    cap.deallocate(freed);
  });
  SECTION("not replayed: nothing was allocated, nothing to wait for") {
    cuda_double::clear_call_counts();
    graph.reset();
    CHECK(cuda_double::call_counts().count("cudaFree") == 0);
    CHECK(cuda_double::call_counts().count("cudaMalloc") == 0);
  }
  SECTION("replayed: the wait, then one cudaFree for the block the capture kept") {
    graph.replay(stream);
    CHECK(cuda_double::live_allocations() == before + 1);
    CUDA_REQUIRE(cudaStreamBeginCapture(other, cudaStreamCaptureModeGlobal));
    cuda_double::clear_call_counts();
    graph.reset();
    const call_map calls = cuda_double::call_counts();
    CHECK(calls.at("cudaMalloc") == 1);
    CHECK(calls.at("cudaFree") == 2); // the sentinel, then the kept block
    CHECK(calls.count("cudaDeviceSynchronize") == 0);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUDA_REQUIRE(cudaStreamIsCapturing(other, &status));
    CHECK(status == cudaStreamCaptureStatusActive); // the other capture goes on
    cudaGraph_t captured = nullptr;
    CUDA_REQUIRE(cudaStreamEndCapture(other, &captured));
    CUDA_REQUIRE(cudaGraphDestroy(captured));
    CHECK(cuda_double::live_allocations() == before);
  }
  SECTION("replayed, then destroyed: the same") {
    graph.replay(stream);
    cuda_double::clear_call_counts();
    { const nodes_graph gone = std::move(graph); }
    CHECK(cuda_double::call_counts().at("cudaFree") == 2);
    CHECK(cuda_double::live_allocations() == before);
  }
  CHECK(cuda_double::violations().empty());
}

TEST_CASE("a private pool whose handle exists adds no node, and its reset waits for the device "
          "before its blocks go back to the shared pool") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph graph;
  const gc::pool_handle handle = graph.pool(); // another graph may take its blocks
  graph.capture(stream, [&](gc::graph::scope& cap) {
    auto* block = cap.allocate<unsigned char>(4096);
    CUDA_REQUIRE(cudaMemsetAsync(block, 1, 4096, cap.stream()));
  });
  CHECK(cuda_double::calls("cudaEventRecordWithFlags") == 0); // no marker
  CHECK(graph.node_count() == 1);
  graph.replay(stream);
  cuda_double::clear_call_counts();
  graph.reset();
  const call_map calls = cuda_double::call_counts();
  CHECK(calls.at("cudaMalloc") == 1); // the wait: a probe slab allocated and freed
  CHECK(calls.at("cudaFree") == 1);   // (the handle keeps the pool: no slab of it is freed)
  CHECK(calls.count("cudaStreamWaitEvent") == 0);
  CHECK(handle.statistics().slabs == 1);
}

TEST_CASE("a private graph that gives its pool a handle later waits for the device before its "
          "blocks change hands") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph first;
  unsigned char* first_block = first.capture(stream, [&](gc::graph::scope& cap) {
    auto* block = cap.allocate<unsigned char>(4096);
    CUDA_REQUIRE(cudaMemsetAsync(block, 1, 4096, cap.stream()));
    return block;
  });
  first.replay(stream);
  using shared_graph = gc::graph_with<gc::pool::shared>;
  shared_graph second{first.pool()};
  cuda_double::clear_call_counts();
  first.reset(); // its block goes to the handle's pool: the replays must be over
  // Waited for as a slab's cudaFree waits: a probe slab allocated and freed.
  CHECK(cuda_double::call_counts().at("cudaMalloc") == 1);
  CHECK(cuda_double::call_counts().at("cudaFree") == 1);
  unsigned char* second_block = second.capture(stream, [&](shared_graph::scope& cap) {
    auto* block = cap.allocate<unsigned char>(4096);
    CUDA_REQUIRE(cudaMemsetAsync(block, 2, 4096, cap.stream()));
    return block;
  });
  CHECK(second_block == first_block); // the handoff happened, after the wait
}

TEST_CASE("a driver function is looked up at its first use, once, whichever threads race for it") {
  cuda_double::reset();
  const gc::detail::driver_api& driver = gc::detail::driver();
  gctest::forget_resolved_driver_functions();
  cuda_double::clear_call_counts();
  CHECK(driver.graph_get_nodes.cached() == nullptr); // nothing is looked up in advance
  constexpr std::size_t racers = 8;
  std::vector<PFN_cuGraphGetNodes_v10000> seen(racers, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < racers; ++i) {
    threads.emplace_back([&seen, &driver, i] { seen[i] = driver.graph_get_nodes.find(); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  REQUIRE(seen[0] != nullptr);
  for (const PFN_cuGraphGetNodes_v10000 function : seen) {
    CHECK(function == seen[0]);
  }
  const std::size_t lookups = cuda_double::calls("cudaGetDriverEntryPointByVersion");
  CHECK(lookups >= 1);
  CHECK(lookups <= racers);
  CHECK(driver.graph_get_nodes.cached() == seen[0]);
  CHECK(driver.graph_get_nodes.require(gc::detail::graphcap_needs) == seen[0]);
  CHECK(cuda_double::calls("cudaGetDriverEntryPointByVersion") == lookups); // kept
  CHECK(driver.graph_node_get_type.cached() == nullptr); // only the function used is resolved
}

TEST_CASE("an allocation whose size overflows makes no CUDA call and leaves the capture going") {
  cuda_double::reset();
  gctest::stream stream;
  const std::size_t overflows = std::numeric_limits<std::size_t>::max() / sizeof(double) + 1;
  const auto refused_then_allocate = [&](auto& graph) {
    using graph_type = std::remove_reference_t<decltype(graph)>;
    graph.capture(stream, [&](typename graph_type::scope& cap) {
      cuda_double::clear_call_counts();
      CHECK_THROWS_AS(cap.template allocate<double>(overflows), std::invalid_argument);
      CHECK(cuda_double::call_counts().empty());       // refused before cudaMallocAsync
      auto* block = cap.template allocate<double>(64); // the capture goes on
      CUDA_REQUIRE(cudaMemsetAsync(block, 0, 64 * sizeof(double), cap.stream()));
      cap.deallocate(block);
    });
    CHECK(graph.node_count() >= 1);
  };
  gc::graph pooled;
  refused_then_allocate(pooled);
  CHECK(pooled.pool_statistics().blocks_in_use == 1);
  gc::graph_with<gc::pool::graph_memory_nodes> memory_nodes;
  refused_then_allocate(memory_nodes);
  CHECK(memory_nodes.node_count() == 3); // alloc, memset, free: nothing of the refused request
}

TEST_CASE("a recapture waits for the graph's last replay once, not once per block") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph graph;
  const gc::pool_handle handle = graph.pool(); // shared: its blocks may change hands
  std::vector<float*> blocks;
  const auto work = [&](gc::graph::scope& cap) {
    blocks.clear();
    for (int i = 0; i < 100; ++i) {
      blocks.push_back(cap.allocate<float>(256));
    }
    CUDA_REQUIRE(cudaMemsetAsync(blocks.back(), 0, 256 * sizeof(float), cap.stream()));
  };
  graph.capture(stream, work);
  const std::vector<float*> first = blocks;
  for (int recapture = 0; recapture < 2; ++recapture) {
    INFO("recapture " << recapture);
    graph.replay(stream);
    cuda_double::clear_call_counts();
    graph.recapture(stream, work);
    // The blocks came back together after one wait for the device (a probe slab allocated and
    // freed), which covers them all; each recapture waits again. No event, no marker.
    CHECK(cuda_double::call_counts().at("cudaMalloc") == 1);
    CHECK(cuda_double::call_counts().at("cudaFree") == 1);
    CHECK(cuda_double::call_counts().count("cudaEventSynchronize") == 0);
    CHECK(blocks == first);
  }
  stream.synchronize();
}

TEST_CASE("a recapture of a pool no one shares takes its blocks back without waiting") {
  cuda_double::reset();
  gctest::stream stream;
  gc::graph graph;
  std::vector<float*> blocks;
  const auto work = [&](gc::graph::scope& cap) {
    blocks.clear();
    for (int i = 0; i < 10; ++i) {
      blocks.push_back(cap.allocate<float>(256));
    }
    CUDA_REQUIRE(cudaMemsetAsync(blocks.back(), 0, 256 * sizeof(float), cap.stream()));
  };
  graph.capture(stream, work);
  const std::vector<float*> first = blocks;
  graph.replay(stream);
  cuda_double::clear_call_counts();
  graph.recapture(stream, work); // the same graph takes them: stream order is the user's, as ever
  const call_map calls = cuda_double::call_counts();
  CHECK(calls.count("cudaEventSynchronize") == 0);
  CHECK(calls.count("cudaDeviceSynchronize") == 0);
  CHECK(blocks == first);
  cuda_double::clear_call_counts();
  graph.reset(); // its slabs go with cudaFree, which waits for the replays of either capture
  CHECK(cuda_double::call_counts().at("cudaFree") == 1);
}
