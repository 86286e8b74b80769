// benchmark/probes/probe_support.hpp - what the timing probes (device_wait.cu,
// parallel_instantiate.cu, sleep_breakdown.cu) share: whether a device is there, milliseconds
// since a time point, and the median of a set of times.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace probe {

using clock_type = std::chrono::steady_clock;

/// True if a CUDA device is present; else prints "<name>: no CUDA device".
inline bool device_present(const char* name) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("%s: no CUDA device\n", name);
    return false;
  }
  return true;
}

/// Milliseconds since `from`.
inline double millis(clock_type::time_point from) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - from).count();
}

/// The median of `values` (the upper one of an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace probe
