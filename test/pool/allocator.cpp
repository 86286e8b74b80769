// Runtime tests: the library adaptors of graphcap/allocator.hpp (capture_allocator for
// Thrust/CUB, capture_resource in CCCL's cuda::mr style) drawing from the graph's pool during
// a capture. Host-executable work only, so they run on the CUDA test double and on the GPU.
#include <graphcap/allocator.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;

/// Captures into `graph`: a block from `Adaptor` (capture_allocator or capture_resource), set
/// to `value` and copied to `host` by the graph. Returns the block.
template <template <class> class Adaptor, class Graph>
void* capture_fill(Graph& graph, std::vector<unsigned char>& host, int value) {
  return graph.capture([&](typename Graph::scope& cap) -> void* {
    Adaptor<typename Graph::scope> adaptor{cap};
    void* block = adaptor.allocate(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(block, value, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), block, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    return block;
  });
}

/// The block is the graph's: written by every replay at the same address.
template <template <class> class Adaptor, class Graph>
void check_fixed_address_across_replays(Graph& graph, const gctest::stream& stream) {
  std::vector<unsigned char> host(bytes, 0);
  void* block = capture_fill<Adaptor>(graph, host, 7);
  REQUIRE(block != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(block) % gc::capture_block_alignment == 0);
  for (int replay = 0; replay < 3; ++replay) {
    CUDA_REQUIRE(cudaMemset(block, 0, bytes)); // outside the graph: the replay restores it
    CUDA_REQUIRE(cudaDeviceSynchronize());     // (cudaMemset may return before it ran)
    std::fill(host.begin(), host.end(), 0);
    graph.replay(stream);
    stream.synchronize();
    CHECK(host == std::vector<unsigned char>(bytes, 7));
    std::vector<unsigned char> direct(bytes, 0);
    CUDA_REQUIRE(cudaMemcpy(direct.data(), block, bytes, cudaMemcpyDeviceToHost));
    CHECK(direct == host);
  }
}

/// A stream object of another library (what CCCL's cuda::stream_ref looks like to stream_ref):
/// the resource takes it where a stream goes.
struct other_library_stream {
  cudaStream_t handle;
  [[nodiscard]] cudaStream_t get() const noexcept { return handle; }
};

template <class Scope>
other_library_stream cuda_stream_of(Scope& cap) {
  return other_library_stream{cap.stream()};
}

/// The two adaptors, as templates of the scope only, for the helpers above.
template <class Scope>
using resource_for = gc::capture_resource<Scope>;
template <class Scope>
using allocator_for = gc::capture_allocator<Scope>;

} // namespace

TEST_CASE("capture_allocator: pool memory at a fixed address for every replay") {
  gctest::stream stream;
  gc::graph private_graph;
  check_fixed_address_across_replays<allocator_for>(private_graph, stream);
  CHECK(private_graph.pool_statistics().in_use_bytes == bytes);
  gc::graph_with<gc::pool::shared> shared_graph{gc::graph_pool_handle()};
  check_fixed_address_across_replays<allocator_for>(shared_graph, stream);
  CHECK(shared_graph.pool_statistics().in_use_bytes == bytes);
}

TEST_CASE("capture_resource: pool memory at a fixed address for every replay") {
  gctest::stream stream;
  gc::graph private_graph;
  check_fixed_address_across_replays<resource_for>(private_graph, stream);
  CHECK(private_graph.pool_statistics().in_use_bytes == bytes);
  gc::graph_with<gc::pool::shared> shared_graph{gc::graph_pool_handle()};
  check_fixed_address_across_replays<resource_for>(shared_graph, stream);
  CHECK(shared_graph.pool_statistics().in_use_bytes == bytes);
}

TEST_CASE("both adaptors draw from a user memory pool") {
  gctest::memory_pool memory_pool;
  gctest::stream stream;
  {
    gc::graph_with<gc::pool::user> with_allocator{memory_pool};
    check_fixed_address_across_replays<allocator_for>(with_allocator, stream);
    gc::graph_with<gc::pool::user> with_resource{memory_pool};
    check_fixed_address_across_replays<resource_for>(with_resource, stream);
    std::uint64_t used = 0;
    CUDA_REQUIRE(cudaMemPoolGetAttribute(memory_pool, cudaMemPoolAttrUsedMemCurrent, &used));
    CHECK(used >= 2 * bytes);
  }
  stream.synchronize();
  memory_pool.destroy(); // the slabs went back to it (freed after the graphs' last replays)
}

TEST_CASE("both adaptors over graph memory nodes: allocation and free nodes in the graph") {
  gctest::stream stream;
  using nodes_graph = gc::graph_with<gc::pool::graph_memory_nodes>;
  nodes_graph graph;
  std::vector<unsigned char> host(2 * bytes, 0);
  graph.capture([&](nodes_graph::scope& cap) {
    gc::capture_allocator allocator{cap};
    gc::capture_resource resource{cap};
    char* first = allocator.allocate(bytes);
    void* second = resource.allocate_async(bytes, 256, cap.stream());
    CUDA_REQUIRE(cudaMemsetAsync(first, 1, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemsetAsync(second, 2, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), first, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    CUDA_REQUIRE(
        cudaMemcpyAsync(host.data() + bytes, second, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    allocator.deallocate(first, bytes);
    resource.deallocate_async(second, bytes, 256, cap.stream());
  });
  CHECK(graph.node_count() == 8); // 2 allocations, 2 memsets, 2 copies, 2 frees
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  CHECK(std::vector<unsigned char>(host.begin(), host.begin() + bytes) ==
        std::vector<unsigned char>(bytes, 1));
  CHECK(std::vector<unsigned char>(host.begin() + bytes, host.end()) ==
        std::vector<unsigned char>(bytes, 2));
}

TEST_CASE("capture_resource in today's CCCL shape: a stream first, and the _sync pair") {
  // allocate(stream, bytes, align) / deallocate(stream, p, bytes, align) and allocate_sync /
  // deallocate_sync (CCCL after 3.0), beside CCCL 3.0's allocate_async and allocate(bytes).
  gctest::stream stream;
  gc::graph graph;
  std::vector<unsigned char> host(bytes, 0);
  graph.capture(stream, [&](gc::graph::scope& cap) {
    gc::capture_resource resource{cap};
    void* first = resource.allocate(cap.stream(), bytes);
    REQUIRE(first != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(first) % gc::capture_block_alignment == 0);
    resource.deallocate(cap.stream(), first, bytes);
    void* again = resource.allocate_sync(bytes, 256); // the capture stream: the same reuse list
    CHECK(again == first);
    CUDA_REQUIRE(cudaMemsetAsync(again, 5, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), again, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    void* scratch = resource.allocate(cuda_stream_of(cap), 64, 128);
    resource.deallocate_sync(scratch, 64, 128); // given back: the next one of its size reuses it
    CHECK(resource.allocate(cap.stream(), 64) == scratch);
    CHECK_THROWS_AS(resource.allocate(cap.stream(), 64, 512), gc::error); // above 256 bytes
    CHECK_THROWS_AS(resource.allocate_sync(64, 3), gc::error);            // not a power of two
  });
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 5));
}

TEST_CASE("a block deallocated through an adaptor is reused on the same stream only") {
  gctest::stream side;
  gctest::event fork;
  gctest::event join;
  gc::graph graph;
  graph.capture([&](gc::graph::scope& cap) {
    gc::capture_allocator allocator{cap};
    char* first = allocator.allocate(1000);
    allocator.deallocate(first, 1000);
    CHECK(allocator.allocate(1000) == first); // same stream, same size class: reused
    allocator.deallocate(first, 1000);

    // The resource's synchronous calls use the capture stream: the same reuse list.
    gc::capture_resource resource{cap};
    void* again = resource.allocate(1000);
    CHECK(again == first);
    resource.deallocate(again, 1000);

    CUDA_REQUIRE(cudaEventRecord(fork, cap.stream()));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, fork, 0));
    gc::capture_allocator on_side{cap, side};
    CHECK(on_side.stream() == static_cast<cudaStream_t>(side));
    char* side_block = on_side.allocate(1000); // no captured order with the free: a new block
    CHECK(side_block != first);
    void* side_resource_block = resource.allocate_async(1000, 256, side);
    CHECK(side_resource_block != first);
    CHECK(side_resource_block != side_block);
    CUDA_REQUIRE(cudaMemsetAsync(side_block, 0, 1000, side));
    CUDA_REQUIRE(cudaEventRecord(join, side));
    CUDA_REQUIRE(cudaStreamWaitEvent(cap.stream(), join, 0));
  });
  CHECK(graph.pool_statistics().blocks_in_use == 3);
}

TEST_CASE("adaptors made from one scope compare equal, from two scopes unequal") {
  gc::graph first;
  gc::graph second;
  auto cap1 = first.begin_capture();
  auto cap2 = second.begin_capture();
  CHECK(gc::capture_allocator{cap1} == gc::capture_allocator{cap1});
  CHECK(gc::capture_allocator{cap1} != gc::capture_allocator{cap2});
  CHECK(gc::capture_allocator{cap1} != gc::capture_allocator{cap1, cap2.stream()});
  CHECK(gc::capture_resource{cap1} == gc::capture_resource{cap1});
  CHECK(gc::capture_resource{cap1} != gc::capture_resource{cap2});
  cap2.end();
  cap1.end();
}

TEST_CASE("after the capture ended, allocating is a state_error and deallocating is quiet") {
  gc::graph graph;
  auto cap = graph.begin_capture();
  gc::capture_allocator allocator{cap};
  gc::capture_resource resource{cap};
  char* block = allocator.allocate(bytes);
  cap.end();
  CHECK_THROWS_AS(allocator.allocate(bytes), gc::state_error);
  CHECK_THROWS_AS(resource.allocate(bytes), gc::state_error);
  CHECK_THROWS_AS(resource.allocate_async(bytes, 256, cap.stream()), gc::state_error);
  try {
    static_cast<void>(allocator.allocate(bytes));
  } catch (const gc::state_error& failure) {
    CHECK_THAT(std::string(failure.what()), gctest::contains("work only while the capture runs"));
  }
  allocator.deallocate(block, bytes); // noexcept: the block stays the graph's until reset
  resource.deallocate(block, bytes);
  CHECK(graph.pool_statistics().blocks_in_use == 1);
  graph.reset();
  CHECK(graph.pool_statistics().blocks_in_use == 0);
  CHECK(graph.pool_statistics().reserved_bytes == 0);
  gctest::require_no_last_error();
}

TEST_CASE("capture_resource refuses alignments the pool cannot give") {
  gc::graph graph;
  graph.capture([&](gc::graph::scope& cap) {
    gc::capture_resource resource{cap};
    for (const std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{512}}) {
      INFO("alignment " << alignment);
      try {
        static_cast<void>(resource.allocate(bytes, alignment));
        FAIL("allocated with alignment " << alignment);
      } catch (const gc::error& failure) {
        CHECK_THAT(std::string(failure.what()), gctest::contains(std::to_string(alignment)));
        CHECK_THAT(std::string(failure.what()), gctest::contains("up to 256"));
      }
    }
    for (const std::size_t alignment : {std::size_t{1}, std::size_t{16}, std::size_t{256}}) {
      void* block = resource.allocate(bytes, alignment);
      CHECK(reinterpret_cast<std::uintptr_t>(block) % alignment == 0);
      resource.deallocate(block, bytes, alignment);
    }
  });
  CHECK(graph.pool_statistics().blocks_in_use == 1); // one block, reused three times
}

TEST_CASE("a capture that throws gives the adaptors' blocks back") {
  gc::graph graph;
  CHECK_THROWS_AS(graph.capture([&](gc::graph::scope& cap) {
    gc::capture_allocator allocator{cap};
    gc::capture_resource resource{cap};
    static_cast<void>(allocator.allocate(bytes));
    static_cast<void>(resource.allocate(3 * (std::size_t{1} << 20)));
    throw std::runtime_error("the library call failed");
  }),
                  std::runtime_error);
  CHECK(graph.empty());
  CHECK(graph.pool_statistics().blocks_in_use == 0);
  CHECK(graph.pool_statistics().reserved_bytes == 0);
}

TEST_CASE("an out-of-memory request through an adaptor is an out_of_memory_error") {
  gc::graph graph;
  const std::size_t huge = std::size_t{1} << 50;
  CHECK_THROWS_AS(graph.capture([&](gc::graph::scope& cap) {
    static_cast<void>(gc::capture_allocator{cap}.allocate(huge));
  }),
                  gc::out_of_memory_error);
  CHECK(graph.empty());
  gctest::require_no_last_error();
}

#if __has_include(<cuda/stream_ref>)
TEST_CASE("capture_resource takes cuda::stream_ref wherever it takes a cudaStream_t") {
  gctest::stream stream; // outlives the graph, whose slabs are freed on it
  gc::graph graph;
  std::vector<unsigned char> host(bytes, 0);
  graph.capture([&](gc::graph::scope& cap) {
    gc::capture_resource resource{cap};
    const cuda::stream_ref capture_stream{cap.stream()};
    void* block = resource.allocate_async(bytes, 256, capture_stream);
    resource.deallocate_async(block, bytes, 256, capture_stream);
    void* reused = resource.allocate_async(bytes, 256, cap.stream()); // the same stream
    CHECK(reused == block);
    CUDA_REQUIRE(cudaMemsetAsync(reused, 6, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), reused, bytes, cudaMemcpyDeviceToHost, cap.stream()));
  });
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 6));
}
#endif

#if defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE) && __has_include(<cuda/memory_resource>)
TEST_CASE("capture_resource behind a cuda::mr::async_resource_ref") {
  gctest::stream stream; // outlives the graph, whose slabs are freed on it
  gc::graph graph;
  std::vector<unsigned char> host(bytes, 0);
  graph.capture([&](gc::graph::scope& cap) {
    gc::capture_resource resource{cap};
    cuda::mr::async_resource_ref<cuda::mr::device_accessible> ref{resource};
    void* block = ref.allocate_async(bytes, 256, cuda::stream_ref{cap.stream()});
    CUDA_REQUIRE(cudaMemsetAsync(block, 8, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), block, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    ref.deallocate_async(block, bytes, 256, cuda::stream_ref{cap.stream()});
  });
  CHECK(graph.pool_statistics().in_use_bytes == bytes);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 8));
}
#endif
