// pool::sleepable's carve and its default host backup on the CUDA test double (#46 items 3 and
// 5): the VMM calls a carve makes (one of each, none while captures fit in it, one unmap at a
// sleep), a carve larger than free memory refused before any call, the failures of its calls,
// and the staged backup (no pinned memory of the backup's size, only the staging buffers).
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <vector>

namespace gc = graphcap;

namespace {

using sleepy_graph = gc::graph_with<gc::pool::sleepable>;

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t large = 3 * mib; // a slab of its own each (4 MiB)

/// A graph that takes `growths` large blocks from its pool, filling block i with i + 1.
std::vector<unsigned char*> capture_growths(sleepy_graph& graph, int growths) {
  return graph.capture([&](sleepy_graph::scope& cap) {
    std::vector<unsigned char*> blocks;
    for (int i = 0; i < growths; ++i) {
      blocks.push_back(cap.allocate<unsigned char>(large));
      CUDA_REQUIRE(cudaMemsetAsync(blocks.back(), i + 1, large, cap.stream()));
    }
    return blocks;
  });
}

std::size_t free_device_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free, &total));
  return free;
}

bool holds(const unsigned char* block, std::size_t size, int value) {
  std::vector<unsigned char> host(size, 0);
  CUDA_REQUIRE(cudaMemcpy(host.data(), block, size, cudaMemcpyDeviceToHost));
  return host == std::vector<unsigned char>(size, static_cast<unsigned char>(value));
}

/// The VMM calls made since the last clear, by name (those the double counted at least once).
std::size_t vmm_calls() {
  std::size_t all = 0;
  for (const char* name : {"cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate", "cuMemMap",
                           "cuMemSetAccess", "cuMemUnmap", "cuMemRelease"}) {
    all += cuda_double::calls(name);
  }
  return all;
}

} // namespace

TEST_CASE("sleepable carve (double): one create and map for the carve, none while captures fit, "
          "one unmap per sleep from the first") {
  cuda_double::reset();
  const std::size_t free_before = free_device_bytes();
  gc::sleepable_pool_handle pool;
  cuda_double::clear_call_counts();
  pool.carve(40 * mib);
  CHECK(cuda_double::calls("cuMemAddressReserve") == 1);
  CHECK(cuda_double::calls("cuMemCreate") == 1);
  CHECK(cuda_double::calls("cuMemMap") == 1);
  CHECK(cuda_double::calls("cuMemSetAccess") == 1);
  CHECK(cuda_double::calls("cuMemRelease") == 1); // the handle goes at once: the map keeps it
  CHECK(pool.carved_bytes() == 40 * mib);
  CHECK(pool.resident_bytes() == 40 * mib);
  CHECK(free_device_bytes() == free_before - 40 * mib);
  sleepy_graph graph{pool};
  cuda_double::clear_call_counts();
  const std::vector<unsigned char*> blocks = capture_growths(graph, 10); // 10 slabs, 40 MiB
  CHECK(vmm_calls() == 0);                                               // all in the carve
  CHECK(pool.statistics().slabs == 10);
  CHECK(pool.resident_bytes() == 40 * mib);
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  for (int cycle = 0; cycle < 2; ++cycle) {
    INFO("cycle " << cycle);
    cuda_double::clear_call_counts();
    pool.sleep(gc::pool::backup::host);
    CHECK(cuda_double::calls("cuMemUnmap") == 1); // the first sleep too
    CHECK(cuda_double::calls("cuMemRelease") == 0);
    CHECK(pool.resident_bytes() == 0);
    CHECK(free_device_bytes() == free_before);
    cuda_double::clear_call_counts();
    pool.wake();
    CHECK(cuda_double::calls("cuMemCreate") == 1);
    CHECK(cuda_double::calls("cuMemMap") == 1);
    CHECK(cuda_double::calls("cuMemSetAccess") == 1);
    CHECK(cuda_double::calls("cuMemRelease") == 1);
    CHECK(pool.resident_bytes() == 40 * mib);
    for (int i = 0; i < 10; ++i) {
      CHECK(holds(blocks[static_cast<std::size_t>(i)], large, i + 1));
    }
  }
  SECTION("a slab beyond the carve grows the pool after it, and sleeps in the same run") {
    sleepy_graph more{pool};
    cuda_double::clear_call_counts();
    const std::vector<unsigned char*> extra = capture_growths(more, 1);
    CHECK(cuda_double::calls("cuMemCreate") == 1);
    CHECK(extra[0] == blocks[9] + 4 * mib); // right after the carve
    cuda_double::clear_call_counts();
    pool.sleep();
    CHECK(cuda_double::calls("cuMemUnmap") == 1);
    CHECK(free_device_bytes() == free_before);
    pool.wake();
    CHECK(cuda_double::calls("cuMemCreate") == 2); // the carve, and the rest
    CHECK(pool.resident_bytes() == 44 * mib);
  }
  SECTION("a graph reset gives its slabs back to the carve: a new capture takes them again") {
    graph.reset();
    sleepy_graph again{pool};
    cuda_double::clear_call_counts();
    const std::vector<unsigned char*> taken = capture_growths(again, 10);
    CHECK(vmm_calls() == 0);
    CHECK(pool.resident_bytes() == 40 * mib);
  }
}

TEST_CASE("sleepable carve (double): a graph's own pool carved before its capture") {
  cuda_double::reset();
  sleepy_graph graph;
  graph.pool().carve(8 * mib);
  cuda_double::clear_call_counts();
  const std::vector<unsigned char*> blocks = capture_growths(graph, 2);
  CHECK(vmm_calls() == 0);
  CHECK(graph.pool().resident_bytes() == 8 * mib);
}

TEST_CASE("sleepable carve (double): a carve larger than free memory is an out_of_memory_error "
          "before any driver call") {
  cuda_double::reset();
  cuda_double::set_device_memory(std::size_t{1} << 30);
  const gctest::live_objects before;
  gc::sleepable_pool_handle pool;
  cuda_double::clear_call_counts();
  const std::size_t too_much = free_device_bytes() + 1;
  CHECK_THROWS_AS(pool.carve(too_much), gc::out_of_memory_error);
  try {
    pool.carve(too_much);
  } catch (const gc::out_of_memory_error& refused) {
    const std::string what = refused.what();
    CHECK(what.find(std::to_string(too_much)) != std::string::npos);            // what was asked
    CHECK(what.find(std::to_string(free_device_bytes())) != std::string::npos); // what is free
    CHECK(what.find("carve less") != std::string::npos);
  }
  CHECK(vmm_calls() == 0);
  CHECK(pool.carved_bytes() == 0);
  CHECK(cuda_double::live_allocations() == before.allocations);
  pool.carve(64 * mib); // a smaller one still fits
  CHECK(pool.carved_bytes() == 64 * mib);
}

TEST_CASE("sleepable carve (double): a failed call of the carve takes nothing") {
  for (const char* call : {"cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess"}) {
    INFO(call);
    cuda_double::reset();
    const gctest::live_objects before;
    const std::size_t free_before = free_device_bytes();
    {
      gc::sleepable_pool_handle pool;
      cuda_double::fail_call(call, cudaErrorMemoryAllocation); // CUDA_ERROR_OUT_OF_MEMORY
      CHECK_THROWS_AS(pool.carve(16 * mib), gc::out_of_memory_error);
      CHECK(pool.carved_bytes() == 0);
      CHECK(pool.resident_bytes() == 0);
      CHECK(free_device_bytes() == free_before);
      cuda_double::fail_call(call, cudaErrorUnknown);
      try {
        pool.carve(16 * mib);
        FAIL("the carve succeeded");
      } catch (const gc::out_of_memory_error&) {
        FAIL("another failure is no shortage of memory");
      } catch (const gc::cuda_error& failed) {
        CHECK(failed.call() == call);
      }
      pool.carve(16 * mib); // nothing was left behind: it can carve now
      CHECK(pool.resident_bytes() == 16 * mib);
    }
    CHECK(cuda_double::live_allocations() == before.allocations); // the pool took it all back
  }
}

TEST_CASE("sleepable carve (double): bad carves are refused") {
  cuda_double::reset();
  sleepy_graph graph;
  gc::sleepable_pool_handle pool = graph.pool();
  CHECK_THROWS_AS(pool.carve(0), gc::error);
  pool.carve(4 * mib);
  CHECK_THROWS_AS(pool.carve(4 * mib), gc::state_error); // one per pool
  static_cast<void>(capture_growths(graph, 1));
  pool.sleep();
  CHECK_THROWS_AS(pool.carve(4 * mib), gc::state_error);
  pool.wake();
}

TEST_CASE("sleepable carve (double): a carved pool destroyed, awake or asleep, leaks nothing") {
  for (const bool asleep : {false, true}) {
    INFO("asleep " << asleep);
    cuda_double::reset();
    const gctest::live_objects before;
    const std::size_t free_before = free_device_bytes();
    {
      gc::sleepable_pool_handle pool;
      pool.carve(8 * mib);
      sleepy_graph graph{pool};
      static_cast<void>(capture_growths(graph, 3)); // beyond the carve too
      if (asleep) {
        pool.sleep(gc::pool::backup::host);
      }
    }
    CHECK(cuda_double::live_allocations() == before.allocations);
    CHECK(free_device_bytes() == free_before);
  }
}

TEST_CASE("sleepable backup (double): by default no pinned memory of the backup's size, only "
          "the staging buffers, kept for the next sleep") {
  cuda_double::reset();
  sleepy_graph graph;
  const std::vector<unsigned char*> blocks = capture_growths(graph, 20); // 80 MiB in use
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  gc::sleepable_pool_handle pool = graph.pool();
  for (int cycle = 0; cycle < 2; ++cycle) {
    INFO("cycle " << cycle);
    for (std::size_t i = 0; i < blocks.size(); ++i) { // what only the backup brings back
      CUDA_REQUIRE(cudaMemset(blocks[i], static_cast<int>(0x40 + i + cycle), large));
    }
    cuda_double::clear_call_counts();
    pool.sleep(gc::pool::backup::host);
    CHECK(pool.backup_bytes() == 80 * mib);
    CHECK(pool.backup_memory() == 64 * mib); // two 32 MiB staging buffers, not 80 MiB
    CHECK(cuda_double::calls("cudaMallocHost") == (cycle == 0 ? 2 : 0));
    CHECK(cuda_double::calls("cudaHostAlloc") == 0);
    CHECK(cuda_double::calls("cudaMemcpyAsync") == 3); // 80 MiB in 32 MiB pieces
    pool.wake();
    CHECK(cuda_double::calls("cudaMemcpyAsync") == 6);
    CHECK(cuda_double::calls("cudaFreeHost") == 0); // the staging stays for the next sleep
    CHECK(pool.backup_memory() == 64 * mib);        // all the pinned memory held while awake
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      CHECK(holds(blocks[i], large, static_cast<int>(0x40 + i + cycle)));
    }
  }
  pool.keep_backup_memory(false); // gives the staging buffers back
  CHECK(pool.backup_memory() == 0);
}

TEST_CASE("sleepable carve (double): a wake failing on the carve stays asleep, keeps the backup "
          "and wakes again") {
  for (const char* call : {"cuMemCreate", "cuMemMap", "cuMemSetAccess"}) {
    INFO(call);
    cuda_double::reset();
    const std::size_t free_before = free_device_bytes();
    gc::sleepable_pool_handle pool;
    pool.carve(16 * mib);
    sleepy_graph graph{pool};
    const std::vector<unsigned char*> blocks = capture_growths(graph, 3);
    gctest::stream stream;
    graph.replay(stream);
    stream.synchronize();
    CUDA_REQUIRE(cudaMemset(blocks[2], 0x61, large));
    pool.sleep(gc::pool::backup::host);
    cuda_double::fail_call(call, cudaErrorMemoryAllocation);
    CHECK_THROWS_AS(pool.wake(), gc::out_of_memory_error);
    CHECK(pool.asleep());
    CHECK(pool.resident_bytes() == 0);
    CHECK(pool.backup_bytes() == 3 * 4 * mib);
    CHECK(free_device_bytes() == free_before);
    pool.wake();
    CHECK(pool.resident_bytes() == 16 * mib);
    CHECK(holds(blocks[2], large, 0x61));
    CHECK(holds(blocks[0], large, 1));
  }
}
