// graphcap/core/stream_ref.hpp - the one stream parameter type graphcap takes.
//
//   void replay(graphcap::stream_ref stream);
//   graph.replay(stream);                    // a cudaStream_t, 0, nullptr or {}
//   graph.replay(cuda::stream_ref{stream});  // CCCL's stream_ref, cuda::stream
//   graph.replay(my_library_stream);         // any class with get(), stream() or get_stream()
//
// A non-owning view of a cudaStream_t, one pointer wide and trivially copyable, so that passing
// it costs what passing the cudaStream_t costs: every graphcap function that takes a stream takes
// this, and no overload exists only to unwrap stream objects. (Modelled on CCCL's
// cuda::stream_ref, without CCCL: the core must not need it.)
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace graphcap {

/// A stream object that wraps a cudaStream_t and hands it out with get(), stream() or
/// get_stream() (asked in that order, as CCCL's cuda::get_stream does): CCCL's cuda::stream_ref
/// and cuda::stream, cuda-api-wrappers' and most libraries' stream classes, graphcap's own
/// capture scopes. (Types that convert to cudaStream_t implicitly are taken as cudaStream_t.)
template <class Stream>
concept stream_wrapper =
    !std::convertible_to<Stream, cudaStream_t> && (
                                                      requires(const Stream& s) {
                                                        {
                                                          s.get()
                                                          } -> std::convertible_to<cudaStream_t>;
                                                      } ||
                                                      requires(const Stream& s) {
                                                        {
                                                          s.stream()
                                                          } -> std::convertible_to<cudaStream_t>;
                                                      } ||
                                                      requires(const Stream& s) {
                                                        {
                                                          s.get_stream()
                                                          } -> std::convertible_to<cudaStream_t>;
                                                      });

namespace detail {
/// The cudaStream_t a stream_wrapper holds.
template <stream_wrapper Stream>
constexpr cudaStream_t unwrap_stream(const Stream& stream) noexcept {
  if constexpr (requires {
                  { stream.get() } -> std::convertible_to<cudaStream_t>;
                }) {
    return static_cast<cudaStream_t>(stream.get());
  } else if constexpr (requires {
                         { stream.stream() } -> std::convertible_to<cudaStream_t>;
                       }) {
    return static_cast<cudaStream_t>(stream.stream());
  } else {
    return static_cast<cudaStream_t>(stream.get_stream());
  }
}
} // namespace detail

/// A stream, as graphcap takes it: converts implicitly from a cudaStream_t (0 and nullptr too:
/// the legacy default stream, or the per-thread one under --default-stream per-thread), from any
/// class that converts to cudaStream_t, and from any stream_wrapper.
class stream_ref {
public:
  /// The default stream.
  constexpr stream_ref() noexcept = default;
  /// `stream` itself; `0` and `nullptr` are the default stream, as they are to CUDA. (No
  /// separate std::nullptr_t constructor: a literal 0 would be ambiguous between the two.)
  constexpr stream_ref(cudaStream_t stream) noexcept : stream_(stream) {} // NOLINT: implicit
  /// A class that converts to cudaStream_t.
  template <class Stream>
  requires(std::is_class_v<Stream>&& std::convertible_to<
           const Stream&,
           cudaStream_t>) constexpr stream_ref(const Stream&
                                                   stream) noexcept // NOLINT: implicit by design
      : stream_(static_cast<cudaStream_t>(stream)) {}
  /// A stream object: its get(), stream() or get_stream().
  template <stream_wrapper Stream>
  constexpr stream_ref(const Stream& stream) noexcept // NOLINT: implicit by design
      : stream_(detail::unwrap_stream(stream)) {}

  /// The stream.
  [[nodiscard]] constexpr cudaStream_t get() const noexcept { return stream_; }
  /// The stream, where a cudaStream_t is wanted.
  constexpr operator cudaStream_t() const noexcept { return stream_; } // NOLINT: implicit

  /// Two views of the same stream.
  friend constexpr bool operator==(stream_ref a, stream_ref b) noexcept {
    return a.stream_ == b.stream_;
  }

private:
  cudaStream_t stream_ = nullptr;
};

static_assert(sizeof(stream_ref) == sizeof(cudaStream_t) &&
              std::is_trivially_copyable_v<stream_ref>);

/// True for the legacy default stream, which cannot be captured: `cudaStreamLegacy`, and `0`
/// unless the translation unit is built with per-thread default streams (nvcc
/// --default-stream per-thread), where `0` means `cudaStreamPerThread`, which can be captured.
[[nodiscard]] inline bool is_legacy_default_stream(stream_ref stream) noexcept {
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
  return stream.get() == cudaStreamLegacy;
#else
  return stream.get() == nullptr || stream.get() == cudaStreamLegacy;
#endif
}

/// Whether `stream` is capturing now (an invalidated capture counts as capturing: it still has
/// to be ended). Throws cuda_error if CUDA cannot answer.
[[nodiscard]] inline bool is_capturing(stream_ref stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  detail::check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

} // namespace graphcap
