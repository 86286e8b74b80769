// test/support/liveness_helpers.hpp - helpers for the liveness::check tests (liveness/liveness.cpp
// on both backends, liveness/liveness_kernels.gpu.cpp on the GPU).
#pragma once

#include <graphcap/liveness.hpp>

#include <cuda_runtime_api.h>

#include <charconv>
#include <cstdint>
#include <string>

#ifdef GCTEST_FREE_WATCH
#include <graphcap/free_watch.hpp>

#include "catch.hpp"
#endif

#ifdef GCTEST_FREE_WATCH
/// In the watched builds of the liveness tests (GCTEST_FREE_WATCH): the case runs with a
/// liveness::free_watch, so that its replays skip their queries while nothing is freed, and must
/// refuse exactly what they refuse without one.
#define GCTEST_WATCH_FREES()                                                                       \
  const graphcap::liveness::free_watch gctest_free_watch;                                          \
  INFO(gctest_free_watch.reason());                                                                \
  REQUIRE(gctest_free_watch.active())
#else
/// Without GCTEST_FREE_WATCH: nothing (the liveness tests as they are).
#define GCTEST_WATCH_FREES() static_cast<void>(0)
#endif

namespace gctest {

/// Whether this build runs its liveness cases under a free watch (GCTEST_FREE_WATCH).
#ifdef GCTEST_FREE_WATCH
inline constexpr bool watched_build = true;
#else
inline constexpr bool watched_build = false;
#endif

/// The full checks (a driver query per input allocation) that `replays` replays of `graph` make.
template <class Graph>
std::uint64_t full_checks_of(Graph& graph, cudaStream_t stream, int replays) {
  const std::uint64_t before = graph.liveness_policy().full_checks();
  for (int i = 0; i < replays; ++i) {
    graph.replay(stream);
  }
  return graph.liveness_policy().full_checks() - before;
}

/// What `replays` replays in a row, the first right after a capture or a free, must cost in full
/// checks: under a free watch the first only (the others take the one-load path, also on the
/// GPU), without one every replay.
constexpr std::uint64_t expected_full_checks(int replays) noexcept {
  return watched_build ? 1U : static_cast<std::uint64_t>(replays);
}

/// The address as liveness_error prints it (0x and lower-case hex digits).
inline std::string hex(const void* pointer) {
  char digits[2 * sizeof(std::uintptr_t) + 2] = {'0', 'x'};
  const auto end = std::to_chars(digits + 2, digits + sizeof digits,
                                 reinterpret_cast<std::uintptr_t>(pointer), 16)
                       .ptr;
  return {digits, end};
}

/// The message of the liveness_error that replaying `graph` throws ("" if it throws none).
template <class Graph>
std::string refusal_of(Graph& graph, cudaStream_t stream) {
  try {
    graph.replay(stream);
  } catch (const graphcap::liveness_error& refusal) {
    return refusal.what();
  }
  return {};
}

} // namespace gctest
