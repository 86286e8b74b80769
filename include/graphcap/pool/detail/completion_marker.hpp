// graphcap/pool/detail/completion_marker.hpp - a slab pool's completion marker: the event every
// replay of a graph records as it finishes (an event-record node, the capture's last), so that its
// pool blocks can change hands, and its slabs be freed, after its last replay with no replay stream
// remembered. Only graphs whose blocks may change hands while they replay carry one
// (pool/slab.hpp says which).
#pragma once

#include <graphcap/core/detail/capture.hpp>
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/detail/free_blocks.hpp>

#include <cuda_runtime_api.h>

#include <memory>
#include <utility>

namespace graphcap::detail::pool {

/// The marker's event and where it stands: recorded in the capture in progress, in the graph.
class completion_marker {
public:
  /// Makes the event, once (before the capture, or during it under the relaxed guard).
  void prepare() {
    if (done_) {
      return;
    }
    const relaxed_capture_mode_guard relaxed; // another thread may be capturing (global mode)
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    try {
      done_ = std::make_shared<const event_handle>(event);
    } catch (...) {
      ignore(cudaEventDestroy(event));
      throw;
    }
  }

  /// Records the event on `stream` as the capture's last node, once per capture (a wrong-thread
  /// end is retried). Most often a failure means the capture was invalidated earlier (a
  /// cudaMalloc in it): a capture_error, explained as a failed end is (capture diagnostics name
  /// the call that broke it).
  void record(cudaStream_t stream) {
    if (recorded_) {
      return;
    }
    prepare(); // a handle taken during the capture
    const cudaError_t status =
        cudaEventRecordWithFlags(done_->get(), stream, cudaEventRecordExternal);
    if (status != cudaSuccess) [[unlikely]] {
      throw_cuda<capture_error>(status, "cudaEventRecordWithFlags",
                                capture::failure_hint(status, stream));
    }
    recorded_ = true;
  }

  /// True when the capture in progress (or just ended) records the marker.
  [[nodiscard]] bool recorded() const noexcept { return recorded_; }
  /// True when the graph captured last ends with the marker.
  [[nodiscard]] bool in_graph() const noexcept { return in_graph_; }
  /// The event the replays record (null before prepare()).
  [[nodiscard]] const ready_event& event() const noexcept { return done_; }

  /// The capture ended: the graph has the marker if it was recorded. `next_capture_anew`: the
  /// next capture records it again (a shared pool's; a private pool keeps it for an update).
  void capture_ended(bool next_capture_anew) noexcept {
    in_graph_ = recorded_;
    if (next_capture_anew) {
      recorded_ = false;
    }
  }

  /// The event the graph's replays record (null if it has none), and the graph forgotten. A
  /// reset drops the event too (the next capture gets a new one); a recapture keeps it, so that
  /// an update in place finds the same event in the new graph.
  [[nodiscard]] ready_event release(bool drop_event) noexcept {
    ready_event marker = in_graph_ ? done_ : nullptr;
    if (drop_event) {
      done_ = nullptr;
    }
    recorded_ = false;
    in_graph_ = false;
    return marker;
  }

private:
  ready_event done_;      // recorded by every replay as it finishes
  bool recorded_ = false; // in the capture in progress
  bool in_graph_ = false; // the graph captured last ends with the marker
};

} // namespace graphcap::detail::pool
