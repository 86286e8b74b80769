// Runtime tests: how long pool memory lives and when it may be reused. Owning buffers outlive
// their graph; blocks handed from one graph to another wait for the first one's last replay;
// graphs sharing a pool overlap exactly where the shared-pool rule says they may. CUDA work the
// host can execute, so that they run on the CUDA test double and on the GPU.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <chrono>
#include <cstddef>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;
constexpr std::size_t mib = std::size_t{1} << 20;

std::vector<unsigned char> read_back(const void* device_memory, std::size_t size = bytes) {
  std::vector<unsigned char> host(size, 0);
  CUDA_REQUIRE(cudaMemcpy(host.data(), device_memory, size, cudaMemcpyDeviceToHost));
  return host;
}

std::vector<unsigned char> filled(int value, std::size_t size = bytes) {
  return std::vector<unsigned char>(size, static_cast<unsigned char>(value));
}

/// A host function that holds its stream for a while: the work after it runs late.
void CUDART_CB hold_stream(void* /*unused*/) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

} // namespace

TEST_CASE("a buffer made during capture outlives its graph") {
  gctest::stream stream;
  gc::buffer<unsigned char> output;
  {
    gc::graph graph;
    output = graph.capture([&](gc::graph::scope& cap) {
      gc::buffer<unsigned char> made = cap.make_buffer<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(made.data(), 6, made.size_bytes(), cap.stream()));
      return made;
    });
    REQUIRE(output);
    CHECK(output.size() == bytes);
    graph.replay(stream);
    stream.synchronize();
  } // the graph is gone; the buffer's block is not
  CHECK(read_back(output.data()) == filled(6));
  CUDA_REQUIRE(cudaMemset(output.data(), 1, bytes)); // still ours to write
  CHECK(read_back(output.data()) == filled(1));
  output.reset();
  CHECK_FALSE(output);
  gctest::require_no_last_error();
}

TEST_CASE("a reset private pool keeps only the slab a buffer pins, until the buffer goes") {
  gc::graph graph;
  gc::buffer<float> kept;
  graph.capture([&](gc::graph::scope& cap) {
    kept = cap.make_buffer<float>(256);                     // 1 KiB block in the first small slab
    auto* temporary = cap.allocate<unsigned char>(3 * mib); // a slab of its own
    CUDA_REQUIRE(cudaMemsetAsync(temporary, 0, 3 * mib, cap.stream()));
    CUDA_REQUIRE(cudaMemsetAsync(kept.data(), 0, kept.size_bytes(), cap.stream()));
  });
  CHECK(graph.pool_statistics().slabs == 2);
  graph.reset();
  const gc::pool_statistics after_reset = graph.pool_statistics();
  CHECK(after_reset.slabs == 1); // the buffer's slab
  CHECK(after_reset.reserved_bytes == 2 * mib);
  CHECK(after_reset.blocks_in_use == 1);
  CHECK(after_reset.in_use_bytes == 1024);
  gc::buffer<float> copy = kept; // copies share the block
  CHECK(kept.use_count() == 2);
  kept.reset();
  CHECK(graph.pool_statistics().slabs == 1);
  copy.reset(); // the last pin: the slab goes
  CHECK(graph.pool_statistics().reserved_bytes == 0);
  CHECK(graph.pool_statistics().blocks_in_use == 0);
}

TEST_CASE("a buffer's block is not reused by other graphs of a shared pool while it lives") {
  const auto pool = gc::graph_pool_handle();
  using shared_graph = gc::graph_with<gc::pool::shared>;
  gc::buffer<unsigned char> output;
  unsigned char* first_block = nullptr;
  {
    shared_graph first{pool};
    first.capture([&](shared_graph::scope& cap) {
      output = cap.make_buffer<unsigned char>(bytes);
      first_block = output.data();
      CUDA_REQUIRE(cudaMemsetAsync(output.data(), 2, bytes, cap.stream()));
    });
  }
  shared_graph second{pool};
  unsigned char* second_block = second.capture([&](shared_graph::scope& cap) {
    auto* block = cap.allocate<unsigned char>(bytes); // same size class as the buffer
    CUDA_REQUIRE(cudaMemsetAsync(block, 3, bytes, cap.stream()));
    return block;
  });
  CHECK(second_block != first_block);
  output.reset(); // now the block is free for the pool
  second.reset();
  shared_graph third{pool};
  const auto* third_block = third.capture([&](shared_graph::scope& cap) {
    auto* first_fit = cap.allocate<unsigned char>(bytes);
    auto* second_fit = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(first_fit, 0, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemsetAsync(second_fit, 0, bytes, cap.stream()));
    return first_fit == first_block || second_fit == first_block ? first_block : nullptr;
  });
  CHECK(third_block == first_block);
}

TEST_CASE("deallocate() refuses a buffer's memory") {
  gc::graph graph;
  CHECK_THROWS_AS(graph.capture([&](gc::graph::scope& cap) {
    const gc::buffer<int> owned = cap.make_buffer<int>(16);
    cap.deallocate(owned.data());
  }),
                  gc::error);
  CHECK(graph.empty());
  CHECK(graph.pool_statistics().blocks_in_use == 0);
}

// [gpu-evidence]: the double runs the replay to its end inside cudaGraphLaunch, so only the GPU
// can show a handoff that does not wait (test/pool/pool_handover.gpu.cpp holds it on the device).
TEST_CASE("blocks of a reset graph reach the next graph of the pool only after its last replay",
          "[gpu-evidence]") {
  // The first graph's replay waits behind a host function that holds the stream for 100 ms;
  // the first graph is reset at once, without synchronizing. The second graph's capture takes
  // the same block, so it must wait for that replay: when it returns, the replay has written
  // its output.
  const auto pool = gc::graph_pool_handle();
  using shared_graph = gc::graph_with<gc::pool::shared>;
  gctest::stream stream;
  std::vector<unsigned char> first_output(bytes, 0);
  shared_graph first{pool};
  unsigned char* first_block = first.capture([&](shared_graph::scope& cap) {
    auto* block = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(block, 8, bytes, cap.stream()));
    CUDA_REQUIRE(
        cudaMemcpyAsync(first_output.data(), block, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    return block;
  });
  CUDA_REQUIRE(cudaLaunchHostFunc(stream, hold_stream, nullptr));
  first.replay(stream);
  first.reset();
  shared_graph second{pool};
  unsigned char* second_block = second.capture([&](shared_graph::scope& cap) {
    auto* block = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(block, 9, bytes, cap.stream()));
    return block;
  });
  REQUIRE(second_block == first_block); // the handoff happened
  CHECK(first_output == filled(8));     // ... after the first graph's replay had finished
  stream.synchronize();
}

TEST_CASE("three graphs sharing a pool: they overlap, and capture order keeps each right") {
  // torch.cuda.graph's three-successive-graphs scenario. Each graph frees its temporary during
  // its capture; the next capture reuses it. Replayed in capture order every result is right;
  // what a graph freed belongs to the next graph, and its kept outputs stay its own.
  const auto pool = gc::graph_pool_handle();
  using shared_graph = gc::graph_with<gc::pool::shared>;
  gctest::stream stream;
  std::vector<shared_graph> graphs;
  std::vector<unsigned char*> temporaries;
  std::vector<unsigned char*> outputs;
  std::vector<std::vector<unsigned char>> results(3, std::vector<unsigned char>(bytes, 0));
  for (int i = 0; i < 3; ++i) {
    graphs.emplace_back(pool);
    graphs.back().capture([&](shared_graph::scope& cap) {
      auto* temporary = cap.allocate<unsigned char>(bytes);
      auto* output = cap.allocate<unsigned char>(bytes); // kept: the graph's output
      CUDA_REQUIRE(cudaMemsetAsync(temporary, 10 + i, bytes, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(output, temporary, bytes, cudaMemcpyDeviceToDevice, cap.stream()));
      CUDA_REQUIRE(cudaMemcpyAsync(results[static_cast<std::size_t>(i)].data(), output, bytes,
                                   cudaMemcpyDeviceToHost, cap.stream()));
      cap.deallocate(temporary);
      temporaries.push_back(temporary);
      outputs.push_back(output);
    });
  }
  // The overlap first: the later captures reused the freed temporary, never a kept output.
  CHECK(temporaries[1] == temporaries[0]);
  CHECK(temporaries[2] == temporaries[0]);
  CHECK(outputs[0] != outputs[1]);
  CHECK(outputs[1] != outputs[2]);
  CHECK(outputs[0] != outputs[2]);
  for (int round = 0; round < 3; ++round) {
    for (auto& graph : graphs) {
      graph.replay(stream);
    }
  }
  stream.synchronize();
  for (int i = 0; i < 3; ++i) {
    CHECK(results[static_cast<std::size_t>(i)] == filled(10 + i));
    CHECK(read_back(outputs[static_cast<std::size_t>(i)]) == filled(10 + i));
  }
  // The shared temporary holds the last graph's data: the first graph's freed memory was the
  // others' to overwrite (the rule: what a graph frees during capture is not its own any more).
  CHECK(read_back(temporaries[0]) == filled(12));
  // Out of order, a graph that read a temporary it did not write first would see another
  // graph's data; these graphs write before they read, so any order gives the same outputs.
  graphs[2].replay(stream);
  graphs[0].replay(stream);
  stream.synchronize();
  CHECK(results[0] == filled(10));
  CHECK(read_back(temporaries[0]) == filled(10));
}

// [gpu-evidence]: on the double the two streams' replays never overlap; only the GPU runs them
// at the same time, where a block shared by the two pools would corrupt the outputs.
TEST_CASE("two graphs with private pools replay concurrently on two streams", "[gpu-evidence]") {
  gctest::stream first_stream;
  gctest::stream second_stream;
  std::vector<unsigned char> input_a(bytes, 0);
  std::vector<unsigned char> input_b(bytes, 0);
  std::vector<unsigned char> output_a(bytes, 0);
  std::vector<unsigned char> output_b(bytes, 0);
  auto capture_copy_through = [](gc::graph& graph, std::vector<unsigned char>& input,
                                 std::vector<unsigned char>& output) {
    return graph.capture([&](gc::graph::scope& cap) {
      auto* temporary = cap.allocate<unsigned char>(bytes);
      CUDA_REQUIRE(
          cudaMemcpyAsync(temporary, input.data(), bytes, cudaMemcpyHostToDevice, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(output.data(), temporary, bytes, cudaMemcpyDeviceToHost, cap.stream()));
      cap.deallocate(temporary);
      return temporary;
    });
  };
  gc::graph graph_a;
  gc::graph graph_b;
  const auto* temporary_a = capture_copy_through(graph_a, input_a, output_a);
  const auto* temporary_b = capture_copy_through(graph_b, input_b, output_b);
  CHECK(temporary_a != temporary_b); // private pools never share a block
  for (int round = 1; round <= 50; ++round) {
    std::fill(input_a.begin(), input_a.end(), static_cast<unsigned char>(round));
    std::fill(input_b.begin(), input_b.end(), static_cast<unsigned char>(200 - round));
    graph_a.replay(first_stream);
    graph_b.replay(second_stream);
    first_stream.synchronize();
    second_stream.synchronize();
    REQUIRE(output_a == filled(round));
    REQUIRE(output_b == filled(200 - round));
  }
}

TEST_CASE(
    "swapped replay order: a shared pool shows the documented corruption, private pools not") {
  // The first graph frees its temporary during its capture; the second graph's output gets that
  // block. In capture order the second graph writes its output last: right. Swapped, the first
  // graph's temporary overwrites the second graph's output: the rule (replay in capture order)
  // is broken and the corruption shows. With private pools nothing overlaps.
  gctest::stream stream;
  auto run = [&](auto& first, auto& second, bool capture_order) {
    using first_graph = std::remove_reference_t<decltype(first)>;
    using second_graph = std::remove_reference_t<decltype(second)>;
    auto* temporary = first.capture([&](typename first_graph::scope& cap) {
      auto* block = cap.template allocate<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(block, 1, bytes, cap.stream()));
      cap.deallocate(block);
      return block;
    });
    auto* output = second.capture([&](typename second_graph::scope& cap) {
      auto* block = cap.template allocate<unsigned char>(bytes); // kept: the graph's output
      CUDA_REQUIRE(cudaMemsetAsync(block, 2, bytes, cap.stream()));
      return block;
    });
    if (capture_order) {
      first.replay(stream);
      second.replay(stream);
    } else {
      second.replay(stream);
      first.replay(stream);
    }
    stream.synchronize();
    const bool overlap = temporary == output;
    const std::vector<unsigned char> result = read_back(output);
    first.reset();
    second.reset();
    return std::pair{overlap, result};
  };
  {
    const auto pool = gc::graph_pool_handle();
    gc::graph_with<gc::pool::shared> first{pool};
    gc::graph_with<gc::pool::shared> second{pool};
    const auto [overlap, result] = run(first, second, /*capture_order=*/true);
    REQUIRE(overlap); // the blocks really overlap: the swapped case below cannot pass by chance
    CHECK(result == filled(2));
  }
  {
    const auto pool = gc::graph_pool_handle();
    gc::graph_with<gc::pool::shared> first{pool};
    gc::graph_with<gc::pool::shared> second{pool};
    const auto [overlap, result] = run(first, second, /*capture_order=*/false);
    REQUIRE(overlap);
    CHECK(result == filled(1)); // corrupted: the first graph's temporary wrote over it
  }
  {
    gc::graph first;
    gc::graph second;
    const auto [overlap, result] = run(first, second, /*capture_order=*/false);
    CHECK_FALSE(overlap);
    CHECK(result == filled(2)); // private pools: any order is right
  }
}

TEST_CASE("a buffer made from a block freed earlier in the capture pins that block") {
  gctest::stream stream;
  gc::graph graph;
  gc::buffer<unsigned char> kept;
  unsigned char* temporary = nullptr;
  graph.capture([&](gc::graph::scope& cap) {
    temporary = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(temporary, 1, bytes, cap.stream()));
    cap.deallocate(temporary);
    kept = cap.make_buffer<unsigned char>(bytes); // the freed block, reused on this stream
    REQUIRE(kept.data() == temporary);
    CUDA_REQUIRE(cudaMemsetAsync(kept.data(), 4, bytes, cap.stream()));
    CHECK_THROWS_AS(cap.deallocate(kept.data()), gc::error); // pinned now
    auto* other = cap.allocate<unsigned char>(bytes);        // not the buffer's block again
    CHECK(other != kept.data());
    CUDA_REQUIRE(cudaMemsetAsync(other, 0, bytes, cap.stream()));
  });
  CHECK(graph.pool_statistics().blocks_in_use == 2);
  graph.replay(stream);
  stream.synchronize();
  graph.reset();
  const gc::pool_statistics after_reset = graph.pool_statistics();
  CHECK(after_reset.blocks_in_use == 1); // the buffer's block outlives the graph's reset
  CHECK(after_reset.in_use_bytes == bytes);
  CHECK(read_back(kept.data()) == filled(4));
  kept.reset();
  CHECK(graph.pool_statistics().reserved_bytes == 0);
}
