// graphcap/liveness/detail/free_epoch.hpp - the process-wide count of frees a free watch saw, which
// lets liveness::check skip its per-input queries while nothing was freed.
//
// One word: odd while at least one graphcap::liveness::free_watch runs, even otherwise; +2 at the
// end of each call that can free memory (liveness/detail/free_calls.hpp), +1 when watching starts
// or stops. A check that passed at an odd value v stays valid while the word reads v: no free
// ended since, and none was missed (a stop or a start would have moved it). An even value is
// never trusted, so frees made while nobody watched are always checked for.
#pragma once

#include <atomic>
#include <cstdint>

namespace graphcap::detail::liveness {

/// The word itself (one per program: an inline variable).
inline std::atomic<std::uint64_t> free_epoch{0};

/// The value a check must have passed at to be trusted; 0 (even) when no watch runs.
[[nodiscard]] inline std::uint64_t trusted_free_epoch() noexcept {
  return free_epoch.load(std::memory_order_acquire);
}

/// Whether a check made at `epoch` (read before the check) may be trusted later.
[[nodiscard]] constexpr bool free_epoch_watched(std::uint64_t epoch) noexcept {
  return (epoch & 1U) != 0;
}

/// A call that can free memory has ended (its API exit): checks made before it are stale.
inline void note_free_ended() noexcept {
  free_epoch.fetch_add(2, std::memory_order_acq_rel);
}

/// Watching starts (even to odd) or stops (odd to even): every check made before is stale.
inline void note_watch_toggled() noexcept {
  free_epoch.fetch_add(1, std::memory_order_acq_rel);
}

} // namespace graphcap::detail::liveness
