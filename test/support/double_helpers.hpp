// test/support/double_helpers.hpp - helpers for the tests that use the CUDA test double's control
// API (they include <cuda_double/control.hpp>, so only targets linking the double may include
// this).
#pragma once

#include <cuda_double/control.hpp>

#include <cstddef>

namespace gctest {

/// What the double holds alive when this is made: two of them, one taken before and one after,
/// show what a step leaked.
struct live_objects {
  std::size_t streams = cuda_double::live_streams();
  std::size_t events = cuda_double::live_events();
  std::size_t graphs = cuda_double::live_graphs();
  std::size_t execs = cuda_double::live_execs();
  std::size_t allocations = cuda_double::live_allocations();
};

} // namespace gctest
