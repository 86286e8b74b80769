// benchmark/probes/sleep_breakdown.cu - where a sleepable pool's sleep + wake time goes.
// bench_sleep puts graphcap's sleep + wake without backup of a 1 GiB pool at 1.6-1.8x the raw VMM
// cycle of one chunk (session 23, an H100: 1.21-1.80 against 0.80-0.93 ms/GiB). The same calls
// by hand, in graphcap's order and with its wait, against graphcap's pool.sleep() and
// pool.wake() timed apart (median of 15 cycles each, ms per GiB):
//  a. raw: cuMemCreate + cuMemMap + cuMemSetAccess, then cuMemUnmap + cuMemRelease (bench_sleep)
//  b. raw in graphcap's order: the handle released right after the map, the unmap alone frees
//  c. b with graphcap's wait for the device before the unmap (a 2 MiB cudaMalloc + cudaFree)
//  d. graphcap: a sleepable graph's pool of 512 blocks of 2 MiB, after its first cycle: sleep(),
//     wake(), and both
//  e. graphcap: a pool carved with 1 GiB before its capture: the same
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include <cuda.h>
#include <cuda_runtime.h>

#include "probe_support.hpp"

#include <cstdio>
#include <vector>

namespace {

template <class F>
F entry(const char* symbol) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  cudaGetDriverEntryPointByVersion(symbol, &function, 12000, cudaEnableDefault, &found);
  return reinterpret_cast<F>(function); // NOLINT: how entry points are typed
}

__global__ void touch(float* data) {
  data[threadIdx.x] += 1.0F;
}

using sleepy_graph = graphcap::graph_with<graphcap::pool::sleepable>;
constexpr std::size_t block = std::size_t{2} << 20;
constexpr std::size_t bytes = std::size_t{1} << 30;
constexpr int cycles = 15;

} // namespace

int main() {
  if (!probe::device_present("sleep_breakdown")) {
    return 0;
  }
  cudaFree(nullptr);
  cudaDeviceProp device{};
  cudaGetDeviceProperties(&device, 0);
  std::printf("sleep_breakdown: %s, 1 GiB, ms per GiB, median of %d cycles\n", device.name, cycles);
  const auto reserve = entry<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  const auto address_free = entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  const auto create = entry<PFN_cuMemCreate_v10020>("cuMemCreate");
  const auto release = entry<PFN_cuMemRelease_v10020>("cuMemRelease");
  const auto map = entry<PFN_cuMemMap_v10020>("cuMemMap");
  const auto unmap = entry<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  const auto set_access = entry<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUdeviceptr base = 0;
  reserve(&base, bytes, 0, 0, 0);
  const auto wait_like_graphcap = [] {
    void* probe = nullptr;
    if (cudaMalloc(&probe, block) == cudaSuccess) {
      cudaFree(probe);
    }
  };
  const auto raw = [&](bool graphcap_order, bool wait) {
    CUmemGenericAllocationHandle handle = 0;
    const auto start = probe::clock_type::now();
    create(&handle, bytes, &prop, 0);
    map(base, bytes, 0, handle, 0);
    set_access(base, bytes, &access, 1);
    if (graphcap_order) {
      release(handle);
    }
    if (wait) {
      wait_like_graphcap();
    }
    unmap(base, bytes);
    if (!graphcap_order) {
      release(handle);
    }
    return probe::millis(start);
  };
  std::vector<double> a, b, c;
  for (int i = 0; i < cycles; ++i) {
    a.push_back(raw(false, false));
    b.push_back(raw(true, false));
    c.push_back(raw(true, true));
  }
  address_free(base, bytes);
  std::printf("  a. raw cycle                                   %7.3f\n", probe::median(a));
  std::printf("  b. raw, graphcap's order                       %7.3f\n", probe::median(b));
  std::printf("  c. raw, graphcap's order and wait              %7.3f\n", probe::median(c));

  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (const bool carved : {false, true}) {
    graphcap::sleepable_pool_handle pool;
    if (carved) {
      pool.carve(bytes);
    }
    sleepy_graph graph{pool};
    graph.capture(stream, [&](sleepy_graph::scope& cap) {
      float* first = cap.allocate<float>(block / sizeof(float));
      for (std::size_t i = 1; i < bytes / block; ++i) {
        static_cast<void>(cap.allocate<float>(block / sizeof(float)));
      }
      touch<<<1, 32, 0, cap.stream()>>>(first);
    });
    graph.replay(stream);
    cudaStreamSynchronize(stream);
    pool.sleep(); // the first cycle: one allocation per run of slabs afterwards
    pool.wake();
    std::vector<double> sleeps, wakes, both;
    for (int i = 0; i < cycles; ++i) {
      const auto start = probe::clock_type::now();
      pool.sleep();
      const double slept = probe::millis(start);
      const auto woke = probe::clock_type::now();
      pool.wake();
      wakes.push_back(probe::millis(woke));
      sleeps.push_back(slept);
      both.push_back(probe::millis(start));
    }
    graph.replay(stream);
    const cudaError_t status = cudaStreamSynchronize(stream);
    std::printf("  %s sleep %7.3f, wake %7.3f, both %7.3f (replay after: %s)\n",
                carved ? "e. graphcap, carved:          " : "d. graphcap, 512 blocks grown:",
                probe::median(sleeps), probe::median(wakes), probe::median(both),
                cudaGetErrorName(status));
  }
  cudaStreamDestroy(stream);
  return 0;
}
