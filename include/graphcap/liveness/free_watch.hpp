// graphcap/liveness/free_watch.hpp - liveness::free_watch: liveness::check at the cost of a plain
// replay while nothing is freed.
//
//   graphcap::liveness::free_watch watch; // for as long as the checked graphs replay
//   graph.replay(stream);                  // one load if nothing was freed since the last check
//
// liveness::check asks the driver about every input allocation before each replay (about 50 ns
// each). While a free_watch lives, CUPTI calls graphcap back at the end of every call that can
// free memory (cudaFree, cudaFreeAsync, cuMemFree, cuMemRelease, ...; the list is in
// liveness/detail/free_calls.hpp) and a process-wide count moves. A replay whose last full check
// saw the same count skips the queries; once it moved, the next replay runs them all again. What
// is refused stays the same; what a watch cannot see is in docs/liveness.md ("The free watch").
//
// It holds a share of CUPTI's one callback subscriber (shared with annot::on and the capture
// diagnostics): a profiler or tool started while it lives finds CUPTI taken. Where CUPTI is held
// already (compute-sanitizer, Nsight, another CUPTI client), active() is false and the checks run
// in full at every replay, as without a watch. Link graphcap::free_watch (it brings libcupti).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/detail/cupti.hpp>
#include <graphcap/liveness/detail/free_calls.hpp>

#include <cupti.h>

#include <string>
#include <utility>

namespace graphcap::liveness {

/// While one lives, liveness::check skips its per-input driver queries when no memory was freed
/// since a graph's last full check. Move-only; never throws: where CUPTI cannot be had, active()
/// is false and reason() says why.
class free_watch {
public:
  /// Starts watching frees (or shares the watch already running). Call outside any capture.
  free_watch() noexcept : answer_(detail::liveness::shared_free_watch::instance().join()) {}

  /// Takes `other`'s share of the watch; `other` is left inactive.
  free_watch(free_watch&& other) noexcept
      : answer_(std::exchange(other.answer_, CUPTI_ERROR_INVALID_OPERATION)) {}
  /// Gives this watch's share back, then takes `other`'s; `other` is left inactive.
  free_watch& operator=(free_watch&& other) noexcept {
    if (this != &other) {
      stop();
      answer_ = std::exchange(other.answer_, CUPTI_ERROR_INVALID_OPERATION);
    }
    return *this;
  }
  free_watch(const free_watch&) = delete;
  free_watch& operator=(const free_watch&) = delete;
  ~free_watch() { stop(); }

  /// Whether frees are being watched: replays of checked graphs are cheap while nothing is freed.
  [[nodiscard]] bool active() const noexcept { return answer_ == CUPTI_SUCCESS; }

  /// Why the watch is not active ("" when it is): CUPTI's answer, in words.
  [[nodiscard]] std::string reason() const {
    if (active()) {
      return {};
    }
    if (answer_ == CUPTI_ERROR_INVALID_OPERATION) {
      return "this free_watch was moved from";
    }
    return answer_ == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
               ? "CUPTI is held by another tool or client (compute-sanitizer, Nsight Systems or "
                 "Compute, cuda-gdb, a profiler): " +
                     detail::cupti_result_name(answer_) +
                     "; liveness::check queries every input at every replay"
               : "CUPTI is unavailable: " + detail::cupti_result_name(answer_) +
                     "; liveness::check queries every input at every replay";
  }

  /// Stops this share of the watch now (the destructor does it otherwise). Outside any capture.
  void stop() noexcept {
    if (active()) {
      detail::liveness::shared_free_watch::instance().leave();
    }
    answer_ = CUPTI_ERROR_INVALID_OPERATION;
  }

private:
  CUptiResult answer_;
};

} // namespace graphcap::liveness
