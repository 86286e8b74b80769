// graphcap/stream.hpp - stream helpers: the stream types graphcap takes, what counts as the
// default stream, is it capturing.
#pragma once

#include <graphcap/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <concepts>

namespace graphcap {

/// A stream object that wraps a cudaStream_t and hands it out with get(): CCCL's
/// cuda::stream_ref and cuda::stream, cuda-api-wrappers' and most libraries' stream classes.
/// graphcap takes one wherever it takes a cudaStream_t, with no cost: the call unwraps it inline.
/// (Types that convert to cudaStream_t implicitly are taken as cudaStream_t already.)
template <class Stream>
concept stream_wrapper = !std::convertible_to<Stream, cudaStream_t> && requires(const Stream& s) {
  { s.get() } -> std::convertible_to<cudaStream_t>;
};

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
