// pool::sleepable on the GPU with the device full (#44, defect 7): a wake that cannot get its
// memory back is an out_of_memory_error naming the VMM call the driver failed (printed: which
// one is the driver's, docs/errors.md), the pool stays asleep with its backup, and wakes with its
// contents once the memory is free. GPU only: the device is filled with cudaMalloc.
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <cstdio>
#include <vector>

namespace gc = graphcap;

namespace {

using sleepy_graph = gc::graph_with<gc::pool::sleepable>;

constexpr std::size_t block_bytes = std::size_t{64} << 20;

std::size_t free_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free, &total));
  return free;
}

/// Device memory taken with cudaMalloc until less than `left` bytes are free; freed with it.
class device_filler {
public:
  explicit device_filler(std::size_t left) {
    for (const std::size_t chunk :
         {std::size_t{1} << 30, std::size_t{64} << 20, std::size_t{2} << 20}) {
      void* taken = nullptr;
      while (free_bytes() > left + chunk && cudaMalloc(&taken, chunk) == cudaSuccess) {
        taken_.push_back(taken);
      }
      static_cast<void>(cudaGetLastError());
    }
  }
  device_filler(const device_filler&) = delete;
  device_filler& operator=(const device_filler&) = delete;
  ~device_filler() {
    for (void* taken : taken_) {
      static_cast<void>(cudaFree(taken));
    }
  }

private:
  std::vector<void*> taken_;
};

} // namespace

TEST_CASE("sleepable (GPU): a wake with the device full fails, stays asleep, and wakes once "
          "memory is free") {
  std::vector<unsigned char> host(4096, 0);
  sleepy_graph graph;
  unsigned char* block = graph.capture([&](sleepy_graph::scope& cap) {
    auto* memory = cap.allocate<unsigned char>(block_bytes);
    CUDA_REQUIRE(cudaMemsetAsync(memory, 7, block_bytes, cap.stream()));
    CUDA_REQUIRE(
        cudaMemcpyAsync(host.data(), memory, host.size(), cudaMemcpyDeviceToHost, cap.stream()));
    return memory;
  });
  gctest::stream stream;
  graph.replay(stream);
  stream.synchronize();
  CUDA_REQUIRE(cudaMemset(block, 0x42, block_bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize());
  gc::sleepable_pool_handle pool = graph.pool();
  pool.sleep(gc::pool::backup::host);
  const std::size_t backup = pool.backup_bytes();
  {
    device_filler filler{std::size_t{8} << 20}; // less than the pool's 64 MiB is left
    try {
      pool.wake();
      FAIL("the wake succeeded with " << (free_bytes() >> 20) << " MiB free");
    } catch (const gc::out_of_memory_error& failure) {
      std::printf("sleepable (GPU): a wake with the device full failed at %s (%s)\n",
                  failure.call().c_str(), cudaGetErrorName(failure.code()));
      CHECK((failure.call() == "cuMemCreate" || failure.call() == "cuMemMap" ||
             failure.call() == "cuMemSetAccess"));
    }
    CHECK(pool.asleep());
    CHECK(pool.resident_bytes() == 0);
    CHECK(pool.backup_bytes() == backup);
    CHECK_THROWS_AS(graph.replay(stream), gc::state_error);
  }
  pool.wake(); // the filler gave the memory back
  std::vector<unsigned char> head(host.size(), 0);
  CUDA_REQUIRE(cudaMemcpy(head.data(), block, head.size(), cudaMemcpyDeviceToHost));
  CHECK(head == std::vector<unsigned char>(head.size(), 0x42));
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(host.size(), 7));
}
