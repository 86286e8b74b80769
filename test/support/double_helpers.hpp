// test/support/double_helpers.hpp - helpers for the tests that use the CUDA test double's control
// API (they include <cuda_double/control.hpp>, so only targets linking the double may include
// this).
#pragma once

#include "catch.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <map>
#include <string>

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

/// Makes each call of a clean run fail once in turn: for every function of `sites` (what
/// cuda_double::call_counts() gave after that run) and each of its calls, arms that call to fail
/// with cudaErrorUnknown, then runs `one_case(function)`, which repeats the run and checks what
/// the failure left. Returns how many failures it armed.
template <class Case>
std::size_t fail_each_call_once(const std::map<std::string, std::size_t>& sites, Case&& one_case) {
  std::size_t injected = 0;
  for (const auto& [function, count] : sites) {
    for (std::size_t nth = 1; nth <= count; ++nth) {
      INFO(function << " failing at call " << nth);
      cuda_double::fail_call(function.c_str(), cudaErrorUnknown, static_cast<int>(nth));
      ++injected;
      one_case(function);
    }
  }
  return injected;
}

} // namespace gctest
