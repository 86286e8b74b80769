// graphcap/control_flow/detail/body_streams.hpp - the stream a conditional body is captured on:
// graphcap's own, made for that body and destroyed when its capture has ended.
//
// A body is captured into its body graph with cudaStreamBeginCaptureToGraph on a stream nothing
// else may be capturing on (PyTorch once took body streams from a shared pool that another
// capture was using: #185836). A new stream per body is the simplest way to be sure: it costs a
// stream creation (a few microseconds) per body at capture time, never at replay, and survives a
// cudaDeviceReset, which a process-wide pool of cached streams would not (their handles could
// then alias the user's streams).
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <utility>

namespace graphcap::detail::control_flow {

/// A non-blocking stream of the current device, owned for one body's capture.
template <class = void>
class basic_body_stream_lease {
public:
  /// No stream.
  basic_body_stream_lease() noexcept = default;
  basic_body_stream_lease(basic_body_stream_lease&& other) noexcept
      : stream_(std::exchange(other.stream_, nullptr)) {}
  basic_body_stream_lease& operator=(basic_body_stream_lease&& other) noexcept {
    if (this != &other) {
      release();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  basic_body_stream_lease(const basic_body_stream_lease&) = delete;
  basic_body_stream_lease& operator=(const basic_body_stream_lease&) = delete;
  ~basic_body_stream_lease() { release(); }

  /// A new stream (made under the relaxed capture mode: the parent capture is running).
  [[nodiscard]] static basic_body_stream_lease take() {
    const relaxed_capture_mode_guard relaxed;
    basic_body_stream_lease lease;
    check(cudaStreamCreateWithFlags(&lease.stream_, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags");
    return lease;
  }

  /// Gives the stream up without destroying it: it holds a capture that CUDA invalidated and that
  /// must not end (detail::control_flow::end_body_capture), and destroying a capturing stream ends
  /// it. One stream kept per such failure, counted by streams_kept().
  void keep() noexcept {
    if (std::exchange(stream_, nullptr) != nullptr) {
      kept_streams().fetch_add(1, std::memory_order_relaxed);
    }
  }
  /// How many body streams keep() gave up in this process.
  [[nodiscard]] static std::size_t streams_kept() noexcept {
    return kept_streams().load(std::memory_order_relaxed);
  }

  /// The leased stream.
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }

private:
  static std::atomic<std::size_t>& kept_streams() noexcept {
    static std::atomic<std::size_t> count{0};
    return count;
  }

  void release() noexcept {
    if (stream_ != nullptr) {
      const relaxed_capture_mode_guard relaxed;
      ignore(cudaStreamDestroy(std::exchange(stream_, nullptr)));
    }
  }

  cudaStream_t stream_ = nullptr;
};
using body_stream_lease = basic_body_stream_lease<>;

} // namespace graphcap::detail::control_flow
