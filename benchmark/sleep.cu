// bench_sleep: pool::sleepable's sleep and wake (#31). A sleepable graph whose pool holds
// BENCH_SLEEP_GIB GiB (default 1) in 2 MiB blocks, each a slab of its own (the worst case: one
// growth per block), and 200 kernels (x += 1 over 1024 floats, as bench_step) on its first block.
// Metric "sleep + wake, no backup" (ms per GiB, host time of the two calls, which wait):
//   raw VMM, one chunk      cuMemCreate + cuMemMap + cuMemSetAccess, cuMemUnmap + cuMemRelease of
//                           the whole size at once, by hand (the baseline: the driver's floor)
//   raw VMM, 2 MiB chunks   the same in 2 MiB pieces
//   graphcap sleep + wake   sleep(backup::none) and wake(), after a first cycle (the pool's
//                           memory is then one allocation per run of contiguous slabs)
// Metric "first sleep + wake, grown in 2 MiB pieces" (ms per GiB): a fresh pool grown once per
// 2 MiB block (not timed), then its first sleep(backup::none) and wake() (graphcap), and its first
// sleep alone; beside them, by hand, 2 MiB pieces given back one cuMemUnmap + cuMemRelease each
// (what the first sleep cost before) and with one cuMemUnmap over the whole range, the handles
// released once mapped (what the first sleep does now, where the driver takes such a range: the
// report's notes say whether it did).
// Metric "first sleep + wake, pre-carved" (ms per GiB): a fresh pool carved with the whole size
// (sleepable_pool_handle::carve: one physical allocation) before its capture, then its first
// sleep(backup::none) and wake(), and its first sleep alone (target #46: <= 1 ms/GiB).
// Metric "sleep + wake, backup::host" (ms per GiB): a pinned cudaMemcpy of the size to the host
// and back (the baseline: what the backup's copies cost at best), graphcap's sleep(host) +
// wake() by default (a pageable backup mapped at each sleep, staged through the two pinned
// buffers the pool keeps), and the same with keep_backup_memory(true) (the pinned memory of the
// whole backup kept from one sleep to the next). A note says what the default holds between
// sleeps.
// Metric "replay" (us per replay, synchronized): a sleepable graph never slept (the baseline) and
// one slept and woken before each round.
// Metric "allocate, free-list hit" (ns per allocation): 10,000 allocations of 512 bytes in a
// recapture, each getting the block the graph gave back, in pool::private_pool (the baseline)
// and in pool::sleepable (target: at most 50 ns).
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kernels = 200;
constexpr int elements = 1024;
constexpr int threads = 256;
constexpr std::size_t block_bytes = std::size_t{2} << 20;

using sleepy_graph = graphcap::graph_with<graphcap::pool::sleepable>;

template <class Function>
Function driver_function(const char* symbol) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  bench::check(
      cudaGetDriverEntryPointByVersion(symbol, &function, 12000, cudaEnableDefault, &found),
      symbol);
  return reinterpret_cast<Function>(function); // NOLINT: how entry points are typed
}

void driver_check(CUresult status, const char* what) {
  bench::check(static_cast<cudaError_t>(status), what);
}

/// The hand-written VMM cycle: `bytes` mapped in pieces of `piece` bytes, then given back.
class raw_vmm {
public:
  raw_vmm(std::size_t bytes, int device) : bytes_(bytes) {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device;
    access_.location = prop_.location;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    driver_check(reserve_(&base_, bytes_, 0, 0, 0), "cuMemAddressReserve");
  }
  raw_vmm(const raw_vmm&) = delete;
  raw_vmm& operator=(const raw_vmm&) = delete;
  raw_vmm(raw_vmm&&) = delete;
  raw_vmm& operator=(raw_vmm&&) = delete;
  ~raw_vmm() { driver_check(free_(base_, bytes_), "cuMemAddressFree"); }

  /// Milliseconds to give back the whole size mapped in `piece` pieces (the mapping not timed):
  /// each piece unmapped and released, or (`one_unmap`) the handles released once mapped and the
  /// range unmapped with one call, one call per piece where the driver refuses (refused()).
  double give_back_ms(std::size_t piece, bool one_unmap) {
    std::vector<CUmemGenericAllocationHandle> handles(bytes_ / piece);
    for (std::size_t i = 0; i < handles.size(); ++i) {
      driver_check(create_(&handles[i], piece, &prop_, 0), "cuMemCreate");
      driver_check(map_(base_ + i * piece, piece, 0, handles[i], 0), "cuMemMap");
      driver_check(access_call_(base_ + i * piece, piece, &access_, 1), "cuMemSetAccess");
      if (one_unmap) {
        driver_check(release_(handles[i]), "cuMemRelease");
      }
    }
    const auto start = bench::steady::now();
    if (one_unmap && unmap_(base_, bytes_) == CUDA_SUCCESS) {
      return bench::micros(start, bench::steady::now()) / 1000.0;
    }
    refused_ = refused_ || one_unmap;
    for (std::size_t i = 0; i < handles.size(); ++i) {
      driver_check(unmap_(base_ + i * piece, piece), "cuMemUnmap");
      if (!one_unmap) {
        driver_check(release_(handles[i]), "cuMemRelease");
      }
    }
    return bench::micros(start, bench::steady::now()) / 1000.0;
  }
  /// True if the driver refused one cuMemUnmap over several mappings.
  [[nodiscard]] bool refused() const noexcept { return refused_; }

  void cycle(std::size_t piece) {
    std::vector<CUmemGenericAllocationHandle> handles(bytes_ / piece);
    for (std::size_t i = 0; i < handles.size(); ++i) {
      driver_check(create_(&handles[i], piece, &prop_, 0), "cuMemCreate");
      driver_check(map_(base_ + i * piece, piece, 0, handles[i], 0), "cuMemMap");
      driver_check(access_call_(base_ + i * piece, piece, &access_, 1), "cuMemSetAccess");
    }
    for (std::size_t i = 0; i < handles.size(); ++i) {
      driver_check(unmap_(base_ + i * piece, piece), "cuMemUnmap");
      driver_check(release_(handles[i]), "cuMemRelease");
    }
  }

private:
  std::size_t bytes_;
  bool refused_ = false;
  CUdeviceptr base_ = 0;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
  PFN_cuMemAddressReserve_v10020 reserve_ =
      driver_function<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  PFN_cuMemAddressFree_v10020 free_ =
      driver_function<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  PFN_cuMemCreate_v10020 create_ = driver_function<PFN_cuMemCreate_v10020>("cuMemCreate");
  PFN_cuMemRelease_v10020 release_ = driver_function<PFN_cuMemRelease_v10020>("cuMemRelease");
  PFN_cuMemMap_v10020 map_ = driver_function<PFN_cuMemMap_v10020>("cuMemMap");
  PFN_cuMemUnmap_v10020 unmap_ = driver_function<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  PFN_cuMemSetAccess_v10020 access_call_ =
      driver_function<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");
};

/// A graph of `kernels` kernels on the first of `blocks` 2 MiB blocks of its pool.
void capture(sleepy_graph& graph, cudaStream_t stream, std::size_t blocks) {
  graph.capture(stream, [&](sleepy_graph::scope& cap) {
    auto* first = cap.allocate<float>(block_bytes / sizeof(float));
    for (std::size_t i = 1; i < blocks; ++i) {
      static_cast<void>(cap.allocate<float>(block_bytes / sizeof(float)));
    }
    for (int k = 0; k < kernels; ++k) {
      bench::add_scalar<<<elements / threads, threads, 0, cap.stream()>>>(first, 1.0F, elements);
    }
  });
}

/// The first sleep(backup::none) of a fresh pool grown in `blocks` 2 MiB pieces, and the first
/// sleep + wake, in milliseconds per GiB, appended when `record`; whether the pool unmapped its
/// segments with one call (the driver took a range over several mappings).
bool first_cycle(cudaStream_t stream, std::size_t blocks, double per_gib,
                 std::vector<double>& sleeps, std::vector<double>& cycles, bool record) {
  sleepy_graph fresh;
  capture(fresh, stream, blocks); // one growth per block
  graphcap::sleepable_pool_handle pool = fresh.pool();
  const auto start = bench::steady::now();
  pool.sleep();
  const auto slept = bench::steady::now();
  pool.wake();
  const auto woken = bench::steady::now();
  if (record) {
    sleeps.push_back(bench::micros(start, slept) / 1000.0 / per_gib);
    cycles.push_back(bench::micros(start, woken) / 1000.0 / per_gib);
  }
  return graphcap::detail::pool::sleepable_access::chunks(pool)->unmaps_runs();
}

/// The first sleep(backup::none) and the first sleep + wake of a fresh pool carved with
/// `blocks` 2 MiB blocks (sleepable_pool_handle::carve) before its capture, in milliseconds per
/// GiB, appended when `record`.
void first_carved_cycle(cudaStream_t stream, std::size_t blocks, double per_gib,
                        std::vector<double>& sleeps, std::vector<double>& cycles, bool record) {
  graphcap::sleepable_pool_handle pool;
  pool.carve(blocks * block_bytes); // one cuMemCreate + cuMemMap
  sleepy_graph fresh{pool};
  capture(fresh, stream, blocks); // no growth: every slab is in the carve
  const auto start = bench::steady::now();
  pool.sleep();
  const auto slept = bench::steady::now();
  pool.wake();
  const auto woken = bench::steady::now();
  if (record) {
    sleeps.push_back(bench::micros(start, slept) / 1000.0 / per_gib);
    cycles.push_back(bench::micros(start, woken) / 1000.0 / per_gib);
  }
}

/// Nanoseconds per allocation of a recapture of `graph` making `count` allocations of 512 bytes
/// (all free-list hits: the blocks the graph gave back), appended when `record`.
template <class Graph>
void recapture_allocations(Graph& graph, cudaStream_t stream, std::size_t count,
                           std::vector<double>& samples, bool record) {
  auto cap = graph.begin_recapture(stream);
  const auto start = bench::steady::now();
  for (std::size_t i = 0; i < count; ++i) {
    static_cast<void>(cap.template allocate<float>(128));
  }
  const auto stop = bench::steady::now();
  cap.end();
  if (record) {
    samples.push_back(1000.0 * bench::micros(start, stop) / static_cast<double>(count));
  }
}

/// Milliseconds of `work`, appended to `samples` divided by `per` when `record`.
template <class Work>
void timed_ms(std::vector<double>& samples, bool record, double per, Work&& work) {
  const auto start = bench::steady::now();
  work();
  const auto stop = bench::steady::now();
  if (record) {
    samples.push_back(bench::micros(start, stop) / 1000.0 / per);
  }
}

} // namespace

int main() {
  if (!bench::device_present("bench_sleep")) {
    return 0;
  }
  const char* const gib_setting = std::getenv("BENCH_SLEEP_GIB");
  const double gib = gib_setting != nullptr ? std::atof(gib_setting) : 1.0;
  const std::size_t bytes = static_cast<std::size_t>(gib * (1 << 30)) / block_bytes * block_bytes;
  const std::size_t blocks = bytes / block_bytes;
  int device = 0;
  bench::check(cudaGetDevice(&device), "cudaGetDevice");
  const bench::owned_stream stream;

  sleepy_graph graph;
  capture(graph, stream, blocks);
  graphcap::sleepable_pool_handle pool = graph.pool();
  pool.sleep(); // the first cycle: afterwards the pool is one allocation per contiguous run
  pool.wake();
  sleepy_graph control; // never slept
  capture(control, stream, blocks);
  sleepy_graph kept;
  capture(kept, stream, blocks);
  graphcap::sleepable_pool_handle kept_pool = kept.pool();
  kept_pool.keep_backup_memory(true);
  sleepy_graph replayed;
  capture(replayed, stream, blocks);
  graphcap::sleepable_pool_handle replayed_pool = replayed.pool();

  constexpr std::size_t allocations = 10000;
  graphcap::graph slab_graph;
  sleepy_graph sleepy_allocations;
  std::vector<double> slab_hits;
  std::vector<double> sleepy_hits;
  const auto allocate_all = [&](auto& scope) {
    for (std::size_t i = 0; i < allocations; ++i) {
      static_cast<void>(scope.template allocate<float>(128));
    }
  };
  slab_graph.capture(stream, [&](graphcap::graph::scope& cap) { allocate_all(cap); });
  sleepy_allocations.capture(stream, [&](sleepy_graph::scope& cap) { allocate_all(cap); });

  raw_vmm raw(bytes, device);
  void* device_copy = nullptr;
  void* host_copy = nullptr;
  bench::check(cudaMalloc(&device_copy, bytes), "cudaMalloc");
  bench::check(cudaMallocHost(&host_copy, bytes), "cudaMallocHost");

  std::vector<double> first_sleeps;
  std::vector<double> first_cycles;
  std::vector<double> carved_sleeps;
  std::vector<double> carved_cycles;
  std::vector<double> raw_unmap_each;
  std::vector<double> raw_unmap_once;
  bool runs_unmapped = true;
  std::vector<double> raw_one;
  std::vector<double> raw_pieces;
  std::vector<double> plain;
  std::vector<double> copies;
  std::vector<double> backed_up;
  std::vector<double> backed_up_kept;
  std::vector<double> replay_control;
  std::vector<double> replay_woken;
  const double per_gib = static_cast<double>(bytes) / (1 << 30);
  bench::interleave(
      bench::scaled(5), 1,
      {[&](bool record) { timed_ms(raw_one, record, per_gib, [&] { raw.cycle(bytes); }); },
       [&](bool record) { timed_ms(raw_pieces, record, per_gib, [&] { raw.cycle(block_bytes); }); },
       [&](bool record) {
         timed_ms(plain, record, per_gib, [&] {
           pool.sleep();
           pool.wake();
         });
       },
       [&](bool record) {
         runs_unmapped = first_cycle(stream, blocks, per_gib, first_sleeps, first_cycles, record) &&
                         runs_unmapped;
       },
       [&](bool record) {
         first_carved_cycle(stream, blocks, per_gib, carved_sleeps, carved_cycles, record);
       },
       [&](bool record) {
         const double ms = raw.give_back_ms(block_bytes, false);
         if (record) {
           raw_unmap_each.push_back(ms / per_gib);
         }
       },
       [&](bool record) {
         const double ms = raw.give_back_ms(block_bytes, true);
         if (record) {
           raw_unmap_once.push_back(ms / per_gib);
         }
       },
       [&](bool record) {
         timed_ms(copies, record, per_gib, [&] {
           bench::check(cudaMemcpy(host_copy, device_copy, bytes, cudaMemcpyDeviceToHost),
                        "cudaMemcpy");
           bench::check(cudaMemcpy(device_copy, host_copy, bytes, cudaMemcpyHostToDevice),
                        "cudaMemcpy");
         });
       },
       [&](bool record) {
         timed_ms(backed_up, record, per_gib, [&] {
           pool.sleep(graphcap::pool::backup::host);
           pool.wake();
         });
       },
       [&](bool record) {
         timed_ms(backed_up_kept, record, per_gib, [&] {
           kept_pool.sleep(graphcap::pool::backup::host);
           kept_pool.wake();
         });
       },
       [&](bool record) {
         bench::synchronized_steps(stream, 20, replay_control, record,
                                   [&] { control.replay(stream); });
       },
       [&](bool record) {
         recapture_allocations(slab_graph, stream, allocations, slab_hits, record);
       },
       [&](bool record) {
         recapture_allocations(sleepy_allocations, stream, allocations, sleepy_hits, record);
       },
       [&](bool record) {
         replayed_pool.sleep();
         replayed_pool.wake();
         bench::synchronized_steps(stream, 20, replay_woken, record,
                                   [&] { replayed.replay(stream); });
       }});

  bench::report report("bench_sleep", "pool::sleepable: sleep and wake (ms per GiB), replay (us)");
  const auto size = static_cast<long long>(bytes >> 20);
  report.add("sleep + wake, no backup (MiB)", size, "raw VMM, one chunk", "ms/GiB", raw_one);
  report.add("sleep + wake, no backup (MiB)", size, "raw VMM, 2 MiB chunks", "ms/GiB", raw_pieces);
  report.add("sleep + wake, no backup (MiB)", size, "graphcap sleep + wake", "ms/GiB", plain);
  report.add("first sleep + wake, grown in 2 MiB pieces (MiB)", size,
             "raw give-back: unmap + release each", "ms/GiB", raw_unmap_each);
  report.add("first sleep + wake, grown in 2 MiB pieces (MiB)", size,
             "raw give-back: one unmap of all", "ms/GiB", raw_unmap_once);
  report.add("first sleep + wake, grown in 2 MiB pieces (MiB)", size, "graphcap first sleep",
             "ms/GiB", first_sleeps);
  report.add("first sleep + wake, grown in 2 MiB pieces (MiB)", size, "graphcap first sleep + wake",
             "ms/GiB", first_cycles);
  report.add("first sleep + wake, pre-carved (MiB)", size, "graphcap first sleep, carved", "ms/GiB",
             carved_sleeps);
  report.add("first sleep + wake, pre-carved (MiB)", size, "graphcap first sleep + wake, carved",
             "ms/GiB", carved_cycles);
  report.add("sleep + wake, backup::host (MiB)", size, "pinned cudaMemcpy there and back", "ms/GiB",
             copies);
  report.add("sleep + wake, backup::host (MiB)", size, "graphcap sleep(host) + wake", "ms/GiB",
             backed_up);
  report.add("sleep + wake, backup::host (MiB)", size, "the same, backup memory kept", "ms/GiB",
             backed_up_kept);
  report.add("replay (kernels)", kernels, "never slept", "us", replay_control);
  report.add("replay (kernels)", kernels, "slept and woken", "us", replay_woken);
  report.add("allocate, free-list hit (allocations)", static_cast<long long>(allocations),
             "pool::private_pool", "ns", slab_hits);
  report.add("allocate, free-list hit (allocations)", static_cast<long long>(allocations),
             "pool::sleepable", "ns", sleepy_hits);
  report.note(std::string{"one cuMemUnmap over several mappings: "} +
              (runs_unmapped && !raw.refused() ? "taken by the driver"
                                               : "refused by the driver (one call per mapping)"));
  report.note(
      "default backup::host holds between sleeps: " + std::to_string(pool.backup_memory() >> 20) +
      " MiB of pinned memory (the staging buffers), no pageable backup");
  report.note("targets (#46): first sleep + wake of a pre-carved pool <= 1 ms/GiB; default "
              "backup::host >= 80% of the pinned copy's bandwidth (ratio <= 1.25)");
  report.note("targets (#31): sleep + wake without backup <= 1 ms/GiB; backup::host >= 80% of the "
              "pinned copy's bandwidth (ratio <= 1.25); replay after wake <= 1.02x; a free-list "
              "hit <= 50 ns");
  report.finish();
  bench::check(cudaFreeHost(host_copy), "cudaFreeHost");
  bench::check(cudaFree(device_copy), "cudaFree");
  return 0;
}
