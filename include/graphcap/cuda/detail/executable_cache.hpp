// graphcap/cuda/detail/executable_cache.hpp - getting back the device memory the driver keeps
// after executable graphs are destroyed.
//
// The driver (580) takes an executable's device memory from a per-context cache in 2 MiB pieces
// and keeps the pieces when the executable is destroyed: no call meant for it gives them back
// (cudaDeviceGraphMemTrim, cudaMemPoolTrimTo, the device limits: H100, session 19, the probe
// benchmark/probes/executable_memory_release.cu). An allocation of all the free memory did:
// 704 MiB held before, 122 MiB after. squeeze_executable_cache() makes that pressure, a
// cudaMalloc of the free figure (freed at once) and one larger than it, which fails, and returns
// what cudaMemGetInfo gained. While it runs the device has no free memory: another thread's or
// process's allocation at that moment can fail, so it is only ever called on request.
//
// Also the readings of cudaMemGetInfo's free figure that the ledger's figures come from
// (device_free_bytes, its no-throw form, and free_figure for the drop around an allocation).
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace graphcap::detail {

/// The device's free bytes (cudaMemGetInfo).
inline std::size_t device_free_bytes() {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return free_bytes;
}

/// The device's free bytes, or 0 where cudaMemGetInfo fails (its error cleared): for a measure
/// that must never fail the work it measures (a pool's slab growth).
inline std::size_t device_free_bytes_or_zero() noexcept {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    static_cast<void>(cudaGetLastError()); // its own error: the figure is only a measure
    return 0;
  }
  return free_bytes;
}

/// cudaMemGetInfo's free figure when made; taken_since() is its drop since, for what an
/// allocation takes of the device beyond its size (a pool's slab and its allocator's reserve, a
/// stream). A failed reading is cleared and gives `otherwise` (a measure never fails the work).
class free_figure {
public:
  free_figure() noexcept : free_(device_free_bytes_or_zero()) {}
  [[nodiscard]] std::size_t taken_since(std::size_t otherwise) const noexcept {
    const std::size_t now = device_free_bytes_or_zero();
    if (free_ == 0 || now == 0) {
      return otherwise;
    }
    return free_ > now ? free_ - now : 0;
  }

private:
  std::size_t free_ = 0;
};

/// Presses the driver to give back the unused pieces of the current device's executable cache;
/// returns the bytes cudaMemGetInfo's free figure gained (0 where it gave none). Leaves no error
/// of its own pending (a failed cudaMalloc's is cleared); where an error was pending before, it
/// tries nothing and returns 0, so that the error stays for its owner.
inline std::size_t squeeze_executable_cache() {
  constexpr std::size_t beyond = std::size_t{64} << 20; // more than the free figure: must fail
  if (cudaPeekAtLastError() != cudaSuccess) {
    return 0;
  }
  const std::size_t before = device_free_bytes();
  for (const std::size_t extra : {std::size_t{0}, beyond}) {
    void* block = nullptr;
    if (cudaMalloc(&block, device_free_bytes() + extra) == cudaSuccess) {
      check(cudaFree(block), "cudaFree");
    } else {
      static_cast<void>(cudaGetLastError()); // the allocation's own error
    }
  }
  const std::size_t after = device_free_bytes();
  return after > before ? after - before : 0;
}

} // namespace graphcap::detail
