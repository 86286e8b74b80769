// graphcap/core/detail/capture.hpp - the mechanics of one stream capture, apart from any graph or
// policy: begin it, end it, abandon it without leaving the stream capturing, and say why it
// failed. basic_graph runs its lifecycle (and its policies' hooks) around these.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/core/detail/diagnosis_hook.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace graphcap::detail::capture {

/// Refuses the legacy default stream before CUDA is asked: it cannot capture. Reported as
/// cudaErrorStreamCaptureUnsupported, what CUDA itself would return.
inline void require_capturable(stream_ref stream) {
  if (is_legacy_default_stream(stream)) [[unlikely]] {
    throw_error<capture_error>(
        cudaErrorStreamCaptureUnsupported, "graphcap::begin_capture",
        "CUDA graphs must be captured on a non-default stream (pass a stream created with "
        "cudaStreamNonBlocking, or none to use the graph's own side stream); replaying on the "
        "default stream afterwards is fine");
  }
}

/// Refuses a stream that a capture runs on already (another graph's, or an invalidated one),
/// before a recapture releases anything: cudaStreamBeginCapture would refuse it too late.
inline void require_not_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (const cudaError_t error = cudaStreamIsCapturing(stream, &status); error != cudaSuccess) {
    throw_cuda<capture_error>(error, "cudaStreamIsCapturing");
  }
  if (status != cudaStreamCaptureStatusNone) [[unlikely]] {
    throw_error<capture_error>(
        cudaErrorIllegalState, "graphcap::begin_recapture",
        "the stream is capturing already (another capture runs on it, or one was invalidated "
        "and not ended): end that capture first, or recapture on another stream");
  }
}

/// Ends whatever capture is still running on `stream` and destroys what it produced; never
/// throws and never leaves the stream capturing. An end that fails for another reason than an
/// invalidated capture may leave the stream capturing (seen with fault injection), so this asks
/// CUDA and tries again, a bounded number of times. Each failed call's last error is cleared
/// (ignore); a user's pending error that none of them replaced stays (docs/errors.md).
inline void abandon(cudaStream_t stream) noexcept {
  for (int attempt = 0; attempt < 3; ++attempt) {
    // If CUDA cannot say, end anyway: ending a stream that does not capture fails harmlessly.
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    const cudaError_t asked = cudaStreamIsCapturing(stream, &status);
    if (asked == cudaSuccess && status == cudaStreamCaptureStatusNone) {
      break;
    }
    ignore(asked);
    cudaGraph_t captured = nullptr;
    ignore(cudaStreamEndCapture(stream, &captured));
    if (captured != nullptr) {
      graph_handle{captured}.reset();
    }
  }
}

/// Ends the capture on `stream`. On success `captured` owns the template. On failure the status
/// is returned: cudaErrorStreamCaptureWrongThread leaves the capture running (only the thread
/// that began it can end it); any other failure has ended and discarded it already, and an end
/// that "succeeded" without a graph is reported as cudaErrorStreamCaptureInvalidated.
[[nodiscard]] inline cudaError_t end(cudaStream_t stream, graph_handle& captured) noexcept {
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream, &graph);
  if (status == cudaSuccess && graph != nullptr) [[likely]] {
    captured.reset(graph);
    return cudaSuccess;
  }
  if (status == cudaErrorStreamCaptureWrongThread) {
    return status;
  }
  if (graph != nullptr) {
    graph_handle{graph}.reset();
  }
  abandon(stream);
  return status == cudaSuccess ? cudaErrorStreamCaptureInvalidated : status;
}

/// What most likely broke a capture that ended with `status`. For an invalidated capture on a
/// blocking stream, the likeliest cause: legacy-stream work. With capture diagnostics on
/// (<graphcap/diagnostics.hpp>), first the call that broke it.
GRAPHCAP_COLD inline std::string failure_hint(cudaError_t status, cudaStream_t stream) {
  std::string hint;
  if (const diagnosis_hooks* diagnostics = diagnosis()) {
    bool named = false;
    hint = diagnostics->explain_end_failure(status, stream, named);
    if (named) {
      return hint; // the call that broke the capture, and what to do about it
    }
    if (!hint.empty()) {
      hint += "; ";
    }
  }
  hint += hint_for(status);
  unsigned int flags = 0;
  if (status == cudaErrorStreamCaptureInvalidated &&
      cudaStreamGetFlags(stream, &flags) == cudaSuccess && (flags & cudaStreamNonBlocking) == 0) {
    hint += "; the capture stream is blocking, so work issued on the legacy default stream "
            "during the capture also invalidates it: capture on a stream created with "
            "cudaStreamNonBlocking";
  }
  static_cast<void>(cudaGetLastError());
  return hint;
}

/// Throws the capture_error for an end() that returned `status`.
GRAPHCAP_COLD [[noreturn]] inline void throw_end_failure(cudaError_t status, cudaStream_t stream) {
  if (status == cudaErrorStreamCaptureWrongThread) {
    throw_cuda<capture_error>(status, "cudaStreamEndCapture");
  }
  throw_cuda<capture_error>(status, "cudaStreamEndCapture", failure_hint(status, stream));
}

} // namespace graphcap::detail::capture
