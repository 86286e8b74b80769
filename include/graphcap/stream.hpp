// graphcap/stream.hpp - stream helpers: what counts as the default stream, is it capturing.
#pragma once

#include <graphcap/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

namespace graphcap {

/// True for the legacy default stream, which cannot be captured: `cudaStreamLegacy`, and `0`
/// unless the translation unit is built with per-thread default streams (nvcc
/// --default-stream per-thread), where `0` means `cudaStreamPerThread`, which can be captured.
[[nodiscard]] inline bool is_legacy_default_stream(cudaStream_t stream) noexcept {
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
  return stream == cudaStreamLegacy;
#else
  return stream == nullptr || stream == cudaStreamLegacy;
#endif
}

/// Whether `stream` is capturing now (an invalidated capture counts as capturing: it still has
/// to be ended). Throws cuda_error if CUDA cannot answer.
[[nodiscard]] inline bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  detail::check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

} // namespace graphcap
