// graphcap/cuda/detail/capture_mode_guard.hpp - run graphcap's own capture-unsafe calls relaxed.
//
// Under mode::global, a cudaGraphInstantiate, cudaGraphExecDestroy or cudaStreamCreate made by
// *any* thread while some capture runs fails and invalidates that capture (seen on the H200).
// graphcap's own such calls (teardown, instantiation, growing a pool) are therefore made with the
// calling thread's capture mode exchanged to relaxed, and the previous mode restored afterwards.
// Only cold paths use this guard: never replay.
#pragma once

#include <cuda_runtime_api.h>

namespace graphcap::detail {

class relaxed_capture_mode_guard {
public:
  relaxed_capture_mode_guard() noexcept {
    // Cannot fail for a valid mode argument; without a driver it fails and changes nothing.
    if (cudaThreadExchangeStreamCaptureMode(&previous_) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      active_ = false;
    }
  }
  ~relaxed_capture_mode_guard() {
    if (active_ && cudaThreadExchangeStreamCaptureMode(&previous_) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
    }
  }
  relaxed_capture_mode_guard(const relaxed_capture_mode_guard&) = delete;
  relaxed_capture_mode_guard& operator=(const relaxed_capture_mode_guard&) = delete;
  relaxed_capture_mode_guard(relaxed_capture_mode_guard&&) = delete;
  relaxed_capture_mode_guard& operator=(relaxed_capture_mode_guard&&) = delete;

private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
  bool active_ = true;
};

} // namespace graphcap::detail
