// Runtime tests of pool::sleepable's carve and default host backup (#46 items 3 and 5) on both
// backends: a carve is device memory taken at once, the captures that fit take none, a sleep
// gives it all back and a wake brings the contents back; a carve larger than free memory fails
// before anything is captured; the staged backup keeps every byte of a pool larger than its
// staging buffers, holding no more pinned memory than they.
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <vector>

namespace gc = graphcap;

namespace {

using sleepy_graph = gc::graph_with<gc::pool::sleepable>;

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t large = 3 * mib; // a slab of its own each (4 MiB)

std::vector<unsigned char*> capture_blocks(sleepy_graph& graph, int count) {
  return graph.capture([&](sleepy_graph::scope& cap) {
    std::vector<unsigned char*> blocks;
    for (int i = 0; i < count; ++i) {
      blocks.push_back(cap.allocate<unsigned char>(large));
      CUDA_REQUIRE(cudaMemsetAsync(blocks.back(), i + 1, large, cap.stream()));
    }
    return blocks;
  });
}

std::size_t free_device_memory() {
  std::size_t free = 0;
  std::size_t total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free, &total));
  return free;
}

bool holds(const unsigned char* block, int value) {
  std::vector<unsigned char> host(large, 0);
  CUDA_REQUIRE(cudaMemcpy(host.data(), block, large, cudaMemcpyDeviceToHost));
  return host == std::vector<unsigned char>(large, static_cast<unsigned char>(value));
}

} // namespace

TEST_CASE("sleepable carve: captures that fit take no memory, and the first sleep gives the "
          "carve back whole") {
  constexpr std::size_t carved = 64 * mib;
  constexpr int count = 12; // 48 MiB of slabs
  gc::sleepable_pool_handle pool;
  const std::size_t free_empty = free_device_memory();
  pool.carve(carved);
  CHECK(pool.carved_bytes() == carved);
  CHECK(pool.resident_bytes() == carved);
  CHECK(free_device_memory() + carved <= free_empty); // taken at once
  sleepy_graph graph{pool};
  const std::vector<unsigned char*> blocks = capture_blocks(graph, count);
  CHECK(pool.resident_bytes() == carved); // the captures grew no further
  CHECK(pool.statistics().reserved_bytes == count * 4 * mib);
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  const std::size_t free_awake = free_device_memory();
  pool.sleep(); // the first sleep: the carve is one piece
  CHECK(pool.resident_bytes() == 0);
  CHECK(free_device_memory() >= free_awake + carved);
  pool.wake();
  CHECK(pool.resident_bytes() == carved);
  graph.replay(stream);
  stream.synchronize();
  for (int cycle = 0; cycle < 2; ++cycle) {
    INFO("backup cycle " << cycle);
    for (int i = 0; i < count; ++i) { // what only the backup brings back
      CUDA_REQUIRE(cudaMemset(blocks[static_cast<std::size_t>(i)], 0x30 + i + cycle, large));
    }
    pool.sleep(gc::pool::backup::host);
    CHECK(pool.backup_bytes() == count * 4 * mib);
    pool.wake();
    for (int i = 0; i < count; ++i) {
      CHECK(holds(blocks[static_cast<std::size_t>(i)], 0x30 + i + cycle));
    }
  }
}

TEST_CASE("sleepable carve: a carve larger than free memory is an out_of_memory_error before "
          "anything is captured") {
  gc::sleepable_pool_handle pool;
  const std::size_t too_much = free_device_memory() + (std::size_t{1} << 30);
  CHECK_THROWS_AS(pool.carve(too_much), gc::out_of_memory_error);
  CHECK(pool.carved_bytes() == 0);
  CHECK(pool.resident_bytes() == 0);
  sleepy_graph graph{pool}; // the pool is as it was: it grows as any
  const std::vector<unsigned char*> blocks = capture_blocks(graph, 1);
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  CHECK(holds(blocks[0], 1));
}

TEST_CASE("sleepable backup: by default a pool larger than the staging buffers keeps every "
          "byte, with no more pinned memory held than they") {
  constexpr int count = 20; // 80 MiB: three staged pieces each way
  sleepy_graph graph;
  const std::vector<unsigned char*> blocks = capture_blocks(graph, count);
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  gc::sleepable_pool_handle pool = graph.pool();
  for (int cycle = 0; cycle < 2; ++cycle) {
    INFO("cycle " << cycle);
    for (int i = 0; i < count; ++i) {
      CUDA_REQUIRE(cudaMemset(blocks[static_cast<std::size_t>(i)], 0x50 + i + cycle, large));
    }
    pool.sleep(gc::pool::backup::host);
    CHECK(pool.backup_bytes() == count * 4 * mib);
    CHECK(pool.backup_memory() <= 64 * mib); // the staging buffers, not the 80 MiB backup
    pool.wake();
    CHECK(pool.backup_memory() <= 64 * mib);
    for (int i = 0; i < count; ++i) {
      CHECK(holds(blocks[static_cast<std::size_t>(i)], 0x50 + i + cycle));
    }
  }
  graph.replay(stream);
  stream.synchronize();
  CHECK(holds(blocks[0], 1));
}
