// benchmark/probes/memory_steps.hpp - what the memory probes (first_use_memory.cu,
// budget_drop.cu) share: cudaMemGetInfo's free figure after the device is idle, and a printed
// step with its drop since the step before.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

namespace probe {

inline long long last_free = 0; // the free figure at the last step

/// The device's free bytes once its work is done.
inline long long free_bytes() {
  cudaDeviceSynchronize();
  std::size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return static_cast<long long>(free);
}

/// Prints `what` with the free figure's drop since the last step, in MiB; returns the drop.
inline double step(const char* what) {
  const long long now = free_bytes();
  const double dropped = static_cast<double>(last_free - now) / (1024.0 * 1024.0);
  std::printf("  %-62s drop %8.2f MiB\n", what, dropped);
  last_free = now;
  return dropped;
}

} // namespace probe
