// pool::sleepable on the CUDA test double (#31): contents really dropped without a backup, each
// VMM call (and each copy of a backup) failing once in growth, sleep and wake, leaving the pool
// consistent and retryable, and a driver without the VMM functions.
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "driver_testing.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

using sleepy_graph = gc::graph_with<gc::pool::sleepable>;

constexpr std::size_t bytes = 4096;

/// Every VMM function the pool looks up again at its next use (after a hidden one is shown).
void forget_vmm_functions() noexcept {
  const auto& table = gc::detail::pool::vmm();
  using testing = gc::detail::driver_testing;
  testing::forget(table.granularity);
  testing::forget(table.address_reserve);
  testing::forget(table.address_free);
  testing::forget(table.create);
  testing::forget(table.release);
  testing::forget(table.map);
  testing::forget(table.unmap);
  testing::forget(table.set_access);
}

using gctest::capture_fill;

std::vector<unsigned char> read_back(const unsigned char* block) {
  std::vector<unsigned char> host(bytes, 0);
  CUDA_REQUIRE(cudaMemcpy(host.data(), block, bytes, cudaMemcpyDeviceToHost));
  return host;
}

const char* const vmm_calls[] = {"cuMemGetAllocationGranularity", "cuMemAddressReserve",
                                 "cuMemCreate", "cuMemMap", "cuMemSetAccess"};

} // namespace

TEST_CASE("sleepable (double): without a backup the contents are gone after wake") {
  cuda_double::reset();
  std::vector<unsigned char> host(bytes, 0);
  sleepy_graph graph;
  unsigned char* block = capture_fill(graph, host, 9);
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  gc::sleepable_pool_handle pool = graph.pool();
  pool.sleep();
  // Nothing is mapped at the block's address while the pool sleeps.
  std::vector<unsigned char> probe(16, 0);
  CHECK(cudaMemcpy(probe.data(), block, probe.size(), cudaMemcpyDeviceToHost) ==
        cudaErrorInvalidValue);
  static_cast<void>(cudaGetLastError());
  pool.wake();
  CHECK(read_back(block) != std::vector<unsigned char>(bytes, 9)); // new pages
  graph.replay(stream);
  stream.synchronize();
  CHECK(read_back(block) == std::vector<unsigned char>(bytes, 9));
}

TEST_CASE("sleepable (double): a VMM call failing as the pool grows fails the capture only") {
  for (const char* call : vmm_calls) {
    INFO(call);
    cuda_double::reset();
    forget_vmm_functions();
    const gctest::live_objects before;
    cuda_double::fail_call(call, cudaErrorMemoryAllocation);
    std::vector<unsigned char> host(bytes, 0);
    {
      sleepy_graph graph;
      try {
        static_cast<void>(capture_fill(graph, host, 3));
        FAIL("the capture succeeded");
      } catch (const gc::out_of_memory_error& failure) {
        CHECK_THAT(std::string{failure.what()}, gctest::contains(call));
      }
      CHECK(cuda_double::live_allocations() == before.allocations);
      // Retried, it works.
      static_cast<void>(capture_fill(graph, host, 3));
      gctest::stream stream;
      graph.replay(stream);
      stream.synchronize();
      CHECK(host == std::vector<unsigned char>(bytes, 3));
    }
    CHECK(cuda_double::live_allocations() == before.allocations);
  }
}

TEST_CASE("sleepable (double): a failed sleep or wake leaves the pool consistent and retryable") {
  // Where each call falls: sleep unmaps (cuMemUnmap: the handles went at the mapping) after the
  // backup (cudaMallocHost, cudaMemcpyAsync, cudaStreamSynchronize); wake takes (cuMemCreate,
  // cuMemMap, cuMemSetAccess, cuMemRelease), then copies back (cudaMemcpyAsync,
  // cudaStreamSynchronize). A failed release keeps the handle (see the test after the next).
  struct injection {
    const char* call;
    bool in_sleep;
    int nth;
  };
  const injection injections[] = {{"cudaMallocHost", true, 1},  {"cudaMemcpyAsync", true, 1},
                                  {"cuMemUnmap", true, 1},      {"cuMemCreate", false, 1},
                                  {"cuMemMap", false, 1},       {"cuMemSetAccess", false, 1},
                                  {"cudaMemcpyAsync", false, 1}};
  for (const injection& fault : injections) {
    INFO(fault.call << (fault.in_sleep ? " in sleep" : " in wake"));
    cuda_double::reset();
    forget_vmm_functions();
    const gctest::live_objects before;
    {
      std::vector<unsigned char> host(bytes, 0);
      sleepy_graph graph;
      unsigned char* block = capture_fill(graph, host, 6);
      gctest::stream stream;
      graph.replay(stream);
      stream.synchronize();
      CUDA_REQUIRE(cudaMemset(block, 0x42, bytes)); // what the backup must bring back
      gc::sleepable_pool_handle pool = graph.pool();
      const std::size_t resident = pool.resident_bytes();
      const gc::pool_statistics stats = pool.statistics();

      if (fault.in_sleep) {
        cuda_double::fail_call(fault.call, cudaErrorMemoryAllocation, fault.nth);
        CHECK_THROWS_AS(pool.sleep(gc::pool::backup::host), gc::cuda_error);
        if (pool.asleep()) { // the release failed: sleep again finishes it
          CHECK_THROWS_AS(graph.replay(stream), gc::state_error);
          pool.sleep(gc::pool::backup::host);
        } else { // the backup failed: nothing changed
          CHECK(pool.resident_bytes() == resident);
          CHECK(pool.backup_bytes() == 0);
          CHECK(read_back(block) == std::vector<unsigned char>(bytes, 0x42));
          pool.sleep(gc::pool::backup::host);
        }
        CHECK(pool.resident_bytes() == 0);
        pool.wake();
      } else {
        pool.sleep(gc::pool::backup::host);
        const std::size_t backup = pool.backup_bytes();
        cuda_double::fail_call(fault.call, cudaErrorMemoryAllocation, fault.nth);
        CHECK_THROWS_AS(pool.wake(), gc::cuda_error);
        CHECK(pool.asleep()); // stays asleep, took nothing, kept its backup
        CHECK(pool.resident_bytes() == 0);
        CHECK(pool.backup_bytes() == backup);
        CHECK_THROWS_AS(graph.replay(stream), gc::state_error);
        pool.wake();
      }
      CHECK_FALSE(pool.asleep());
      CHECK(pool.resident_bytes() == resident);
      CHECK(pool.statistics().reserved_bytes == stats.reserved_bytes);
      CHECK(read_back(block) == std::vector<unsigned char>(bytes, 0x42));
      graph.replay(stream);
      stream.synchronize();
      CHECK(host == std::vector<unsigned char>(bytes, 6));
    }
    CHECK(cuda_double::live_allocations() == before.allocations);
  }
}

TEST_CASE("sleepable (double): a wake that cannot get memory is an out_of_memory_error") {
  cuda_double::reset();
  forget_vmm_functions();
  std::vector<unsigned char> host(bytes, 0);
  sleepy_graph graph;
  static_cast<void>(capture_fill(graph, host, 1));
  gc::sleepable_pool_handle pool = graph.pool();
  pool.sleep(gc::pool::backup::host);
  cuda_double::fail_call("cuMemCreate", cudaErrorMemoryAllocation);
  CHECK_THROWS_AS(pool.wake(), gc::out_of_memory_error);
  CHECK(pool.asleep());
  pool.wake();
  CHECK_FALSE(pool.asleep());
}

TEST_CASE("sleepable (double): a wake out of memory names the call the driver failed, at each "
          "of them") {
  // Which call finds the device full is the driver's (docs/errors.md): each one fails the wake
  // with an out_of_memory_error naming it (a wake used to name the call that ended the last
  // successful growth, cuMemSetAccess, whichever failed); the pool stays asleep with its backup
  // and wakes, contents intact, once the memory is free.
  for (const char* call : {"cuMemCreate", "cuMemMap", "cuMemSetAccess"}) {
    INFO(call);
    cuda_double::reset();
    forget_vmm_functions();
    cuda_double::set_device_memory(std::size_t{64} << 20);
    cuda_double::set_vmm_out_of_memory_call(call);
    std::vector<unsigned char> host(bytes, 0);
    sleepy_graph graph;
    unsigned char* block = capture_fill(graph, host, 4);
    CUDA_REQUIRE(cudaMemset(block, 0x42, bytes));
    gc::sleepable_pool_handle pool = graph.pool();
    pool.sleep(gc::pool::backup::host);
    const std::size_t backup = pool.backup_bytes();
    void* taken = nullptr;
    CUDA_REQUIRE(cudaMalloc(&taken, std::size_t{63} << 20)); // the memory the pool gave back
    try {
      pool.wake();
      FAIL("the wake succeeded");
    } catch (const gc::out_of_memory_error& failure) {
      CHECK(failure.call() == call);
      CHECK_THAT(std::string{failure.what()}, gctest::contains("free memory and call wake()"));
    }
    CHECK(pool.asleep());
    CHECK(pool.resident_bytes() == 0);
    CHECK(pool.backup_bytes() == backup);
    CUDA_REQUIRE(cudaFree(taken));
    pool.wake();
    CHECK(read_back(block) == std::vector<unsigned char>(bytes, 0x42));
    gctest::stream stream;
    graph.replay(stream);
    stream.synchronize();
    CHECK(host == std::vector<unsigned char>(bytes, 4));
  }
  cuda_double::reset();
}

TEST_CASE("sleepable (double): a driver without a VMM function fails this pool only, naming it") {
  cuda_double::reset();
  cuda_double::hide_driver_function("cuMemCreate");
  forget_vmm_functions();
  std::vector<unsigned char> host(bytes, 0);
  {
    sleepy_graph graph;
    try {
      static_cast<void>(capture_fill(graph, host, 1));
      FAIL("the capture succeeded");
    } catch (const gc::cuda_error& failure) {
      CHECK_THAT(std::string{failure.what()},
                 gctest::contains("pool::sleepable needs cuMemCreate"));
    }
    gc::graph plain; // the slab pools need no VMM function
    gctest::stream stream;
    plain.capture(stream,
                  [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(host.data(), 0, 0, s)); });
  }
  cuda_double::show_driver_functions();
  forget_vmm_functions();
  CHECK(cuda_double::live_allocations() == 0);
}

TEST_CASE("sleepable (double): after a wake, contiguous slabs are one physical allocation") {
  cuda_double::reset();
  forget_vmm_functions();
  constexpr std::size_t large = std::size_t{3} << 20; // a slab of its own each (4 MiB)
  sleepy_graph graph;
  graph.capture([&](sleepy_graph::scope& cap) {
    for (int i = 0; i < 3; ++i) {
      auto* block = cap.allocate<unsigned char>(large);
      CUDA_REQUIRE(cudaMemsetAsync(block, i + 1, large, cap.stream()));
    }
  });
  gc::sleepable_pool_handle pool = graph.pool();
  CHECK(pool.statistics().slabs == 3);
  CHECK(cuda_double::calls("cuMemCreate") == 3);         // one per growth
  CHECK(cuda_double::calls("cuMemAddressReserve") == 1); // one arena
  CHECK(cuda_double::calls("cuMemRelease") == 3);        // each handle once mapped
  pool.sleep(gc::pool::backup::host);
  CHECK(cuda_double::calls("cuMemUnmap") == 1); // the three segments are contiguous: one run
  CHECK(cuda_double::calls("cuMemRelease") == 3);
  cuda_double::clear_call_counts();
  pool.wake();
  CHECK(cuda_double::calls("cuMemCreate") == 1); // one physical allocation for the run
  CHECK(cuda_double::calls("cuMemMap") == 1);
  CHECK(cuda_double::calls("cuMemSetAccess") == 1);
  CHECK(cuda_double::calls("cuMemRelease") == 1);
  CHECK(cuda_double::calls("cudaMemcpyAsync") == 1); // and one copy back
  pool.sleep();
  CHECK(cuda_double::calls("cuMemUnmap") == 1);
  CHECK(cuda_double::calls("cuMemRelease") == 1);
  pool.wake();
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  CHECK(pool.resident_bytes() == pool.statistics().reserved_bytes);
}

TEST_CASE("sleepable (double): a graph reset or destroyed while its pool sleeps leaks nothing") {
  cuda_double::reset();
  forget_vmm_functions();
  std::vector<unsigned char> host(bytes, 0);
  SECTION("reset while asleep, the pool held by a handle: woken, it captures again") {
    sleepy_graph graph;
    static_cast<void>(capture_fill(graph, host, 1));
    gc::sleepable_pool_handle pool = graph.pool();
    pool.sleep(gc::pool::backup::host);
    graph.reset(); // the blocks go back to the pool, which keeps its slabs (the handle holds it)
    CHECK(pool.statistics().blocks_in_use == 0);
    pool.wake();
    static_cast<void>(capture_fill(graph, host, 2));
    gctest::stream stream;
    graph.replay(stream);
    stream.synchronize();
    CHECK(host == std::vector<unsigned char>(bytes, 2));
  }
  SECTION("the last holder reset while asleep: the slabs go at once, the backup with the pool") {
    sleepy_graph graph;
    static_cast<void>(capture_fill(graph, host, 1));
    graph.pool().sleep(gc::pool::backup::host); // the handle is gone again
    graph.reset();
    CHECK(graph.pool_statistics().slabs == 0);
  }
  CHECK(cuda_double::live_allocations() == 0);
}

TEST_CASE("sleepable (double): sleep waits for the device, each graph's last replay, a reset "
          "graph's too") {
  cuda_double::reset();
  forget_vmm_functions();
  std::vector<unsigned char> host(bytes, 0);
  gc::sleepable_pool_handle pool;
  sleepy_graph first{pool};
  sleepy_graph second{pool};
  cuda_double::clear_call_counts();
  static_cast<void>(capture_fill(first, host, 1));
  static_cast<void>(capture_fill(second, host, 2));
  CHECK(cuda_double::calls("cudaEventRecordWithFlags") == 0); // no completion marker
  gctest::stream stream;
  first.replay(stream);
  second.replay(stream);
  cuda_double::clear_call_counts();
  first.reset(); // its blocks go back to the shared pool after a wait for the device
  CHECK(cuda_double::calls("cudaMalloc") == 1);
  CHECK(cuda_double::calls("cudaFree") == 1);
  cuda_double::clear_call_counts();
  pool.sleep();
  CHECK(cuda_double::calls("cudaMalloc") == 1); // the wait: a probe slab allocated and freed
  CHECK(cuda_double::calls("cudaFree") == 1);
  CHECK(cuda_double::calls("cudaEventSynchronize") == 0);
  pool.wake();
  second.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 2));
}

TEST_CASE("sleepable (double): keep_backup_memory keeps the pinned memory for the next sleep") {
  cuda_double::reset();
  forget_vmm_functions();
  std::vector<unsigned char> host(bytes, 0);
  sleepy_graph graph;
  unsigned char* block = capture_fill(graph, host, 1);
  gc::sleepable_pool_handle pool = graph.pool();
  pool.sleep(gc::pool::backup::host);
  pool.wake();
  const std::size_t staging = 2 * pool.statistics().in_use_bytes; // two buffers, under 32 MiB
  CHECK(pool.backup_memory() == staging); // by default, wake frees the backup, not the staging
  pool.keep_backup_memory(true);
  cuda_double::clear_call_counts();
  pool.sleep(gc::pool::backup::host);
  pool.wake();
  CHECK(pool.backup_bytes() == 0);
  CHECK(pool.backup_memory() == staging + pool.statistics().in_use_bytes); // kept
  CUDA_REQUIRE(cudaMemset(block, 0x77, bytes));
  pool.sleep(gc::pool::backup::host);
  CHECK(cuda_double::calls("cudaMallocHost") == 1); // the first of the two sleeps only
  pool.wake();
  CHECK(read_back(block) == std::vector<unsigned char>(bytes, 0x77));
  pool.keep_backup_memory(false); // frees what is kept, the staging buffers too
  CHECK(pool.backup_memory() == 0);
  CHECK(cuda_double::calls("cudaFreeHost") == 3);
}

namespace {

constexpr std::size_t large = std::size_t{3} << 20; // a slab of its own each (4 MiB)

/// A graph that grows its pool `growths` times (a large block each), filling block i with i + 1.
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

} // namespace

TEST_CASE("sleepable (double): a pool grown 10 times sleeps and wakes in O(1) driver calls") {
  cuda_double::reset();
  forget_vmm_functions();
  const std::size_t free_before = free_device_bytes();
  sleepy_graph graph;
  const std::vector<unsigned char*> blocks = capture_growths(graph, 10);
  gc::sleepable_pool_handle pool = graph.pool();
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  REQUIRE(pool.statistics().slabs == 10);
  REQUIRE(cuda_double::calls("cuMemMap") == 10); // one segment per growth
  for (int cycle = 0; cycle < 3; ++cycle) {
    INFO("cycle " << cycle);
    cuda_double::clear_call_counts();
    pool.sleep(gc::pool::backup::host);
    CHECK(pool.resident_bytes() == 0);
    CHECK(cuda_double::calls("cuMemUnmap") == 1); // the first sleep too: one run
    CHECK(cuda_double::calls("cuMemRelease") == 0);
    CHECK(cuda_double::calls("cudaMemcpyAsync") == 2); // one run, in 32 MiB staged pieces
    CHECK(free_device_bytes() == free_before);         // the memory really went
    pool.wake();
    CHECK(cuda_double::calls("cuMemCreate") == 1);
    CHECK(cuda_double::calls("cuMemMap") == 1);
    CHECK(cuda_double::calls("cuMemSetAccess") == 1);
    CHECK(cuda_double::calls("cuMemRelease") == 1);
    CHECK(pool.resident_bytes() == pool.statistics().reserved_bytes);
    for (int i = 0; i < 10; ++i) {
      CHECK(holds(blocks[static_cast<std::size_t>(i)], large, i + 1));
    }
  }
}

TEST_CASE("sleepable (double): a driver refusing to unmap several mappings at once gets one "
          "call each") {
  cuda_double::reset();
  forget_vmm_functions();
  const std::size_t free_before = free_device_bytes();
  sleepy_graph graph;
  const std::vector<unsigned char*> blocks = capture_growths(graph, 4);
  gc::sleepable_pool_handle pool = graph.pool();
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  cuda_double::clear_call_counts();
  cuda_double::fail_call("cuMemUnmap", cudaErrorInvalidValue); // as a driver that refuses it
  pool.sleep(gc::pool::backup::host);
  CHECK(cuda_double::calls("cuMemUnmap") == 5); // the refused one, then one per segment
  CHECK(pool.resident_bytes() == 0);
  CHECK(free_device_bytes() == free_before);
  pool.wake();
  for (int i = 0; i < 4; ++i) {
    CHECK(holds(blocks[static_cast<std::size_t>(i)], large, i + 1));
  }
  SECTION("another error fails the sleep: the pool is asleep, and sleep() again finishes it") {
    cuda_double::fail_call("cuMemUnmap", cudaErrorMemoryAllocation);
    CHECK_THROWS_AS(pool.sleep(), gc::cuda_error);
    CHECK(pool.asleep());
    CHECK(pool.resident_bytes() == pool.statistics().reserved_bytes);
    pool.sleep();
    CHECK(pool.resident_bytes() == 0);
    pool.wake();
  }
  graph.replay(stream);
  stream.synchronize();
  CHECK(holds(blocks[3], large, 4));
}

TEST_CASE("sleepable (double): a handle whose early release failed is released by the sleep") {
  cuda_double::reset();
  forget_vmm_functions();
  const gctest::live_objects before;
  const std::size_t free_before = free_device_bytes();
  {
    std::vector<unsigned char> host(bytes, 0);
    sleepy_graph graph;
    cuda_double::fail_call("cuMemRelease", cudaErrorUnknown);
    static_cast<void>(capture_fill(graph, host, 5)); // the growth succeeds all the same
    gc::sleepable_pool_handle pool = graph.pool();
    cuda_double::clear_call_counts();
    pool.sleep();
    CHECK(cuda_double::calls("cuMemRelease") == 1); // the handle kept
    CHECK(free_device_bytes() == free_before);
    pool.wake();
    gctest::stream stream;
    graph.replay(stream);
    stream.synchronize();
    CHECK(host == std::vector<unsigned char>(bytes, 5));
  }
  CHECK(cuda_double::live_allocations() == before.allocations);
}

TEST_CASE("sleepable (double): the backup copies the blocks in use only, and they survive") {
  cuda_double::reset();
  forget_vmm_functions();
  constexpr std::size_t small = 3000; // a size class of 3072 bytes
  constexpr std::size_t other = 5000; // 5120 bytes
  gc::sleepable_pool_handle pool;
  sleepy_graph first{pool};
  sleepy_graph second{pool};
  sleepy_graph third{pool};
  auto fill = [](sleepy_graph::scope& cap, std::size_t size, int value) {
    auto* block = cap.allocate<unsigned char>(size);
    CUDA_REQUIRE(cudaMemsetAsync(block, value, size, cap.stream()));
    return block;
  };
  first.capture([&](sleepy_graph::scope& cap) { // its blocks go back to the pool below
    for (int i = 0; i < 3; ++i) {
      static_cast<void>(fill(cap, small, 1));
    }
    static_cast<void>(fill(cap, large, 1)); // a slab of its own
  });
  gc::buffer<unsigned char> output;
  std::vector<unsigned char*> kept = second.capture([&](sleepy_graph::scope& cap) {
    unsigned char* before = fill(cap, small, 0x12);
    output = cap.make_buffer<unsigned char>(other);
    CUDA_REQUIRE(cudaMemsetAsync(output.data(), 0x13, other, cap.stream()));
    unsigned char* after = fill(cap, small, 0x14);
    return std::vector<unsigned char*>{before, after, fill(cap, large, 0x15)};
  });
  first.reset(); // free blocks: three small ones before second's, and a whole slab
  kept.push_back(third.capture([&](sleepy_graph::scope& cap) { return fill(cap, small, 0x16); }));
  gctest::stream stream;
  second.replay(stream);
  third.replay(stream);
  stream.synchronize();
  // Written after the replays: only a backup of these blocks brings it back.
  CUDA_REQUIRE(cudaMemset(kept[0], 0x42, small));
  CUDA_REQUIRE(cudaMemset(output.data(), 0x43, other));
  CUDA_REQUIRE(cudaMemset(kept[2], 0x45, large));
  const gc::pool_statistics stats = pool.statistics();
  REQUIRE(stats.in_use_bytes == 3 * 3072 + 5120 + (std::size_t{4} << 20));
  REQUIRE(stats.reserved_bytes == (std::size_t{2} << 20) + 2 * (std::size_t{4} << 20));
  cuda_double::clear_call_counts();
  pool.sleep(gc::pool::backup::host);
  CHECK(pool.backup_bytes() == stats.in_use_bytes);      // not the 10 MiB reserved
  CHECK(pool.backup_memory() == 2 * stats.in_use_bytes); // the staging buffers (< 32 MiB)
  // third's block (where first's first one was), second's three blocks, its large one: 3 ranges.
  CHECK(cuda_double::calls("cudaMemcpyAsync") == 3);
  pool.wake();
  CHECK(holds(kept[0], small, 0x42));
  CHECK(holds(output.data(), other, 0x43));
  CHECK(holds(kept[1], small, 0x14));
  CHECK(holds(kept[2], large, 0x45));
  CHECK(holds(kept[3], small, 0x16));
  SECTION("a buffer outliving its graph is backed up alone") {
    second.reset();
    third.reset();
    CHECK(pool.statistics().in_use_bytes == 5120);
    pool.sleep(gc::pool::backup::host);
    CHECK(pool.backup_bytes() == 5120);
    pool.wake();
    CHECK(holds(output.data(), other, 0x43));
  }
}

TEST_CASE("sleepable (double): a slab released with a buffer in it backs up that buffer only") {
  cuda_double::reset();
  forget_vmm_functions();
  constexpr std::size_t other = 5000; // 5120 bytes
  sleepy_graph graph;                 // a private pool: reset releases it
  gc::buffer<unsigned char> kept;
  graph.capture([&](sleepy_graph::scope& cap) {
    auto* scratch = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(scratch, 1, bytes, cap.stream()));
    kept = cap.make_buffer<unsigned char>(other);
    CUDA_REQUIRE(cudaMemsetAsync(kept.data(), 0x51, other, cap.stream()));
  });
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  graph.reset(); // the slab stays for the buffer, its other blocks never handed out again
  gc::sleepable_pool_handle pool = graph.pool();
  CHECK(pool.statistics().in_use_bytes == 5120);
  CHECK(pool.statistics().slabs == 1);
  pool.sleep(gc::pool::backup::host);
  CHECK(pool.backup_bytes() == 5120);
  pool.wake();
  CHECK(holds(kept.data(), other, 0x51));
}
