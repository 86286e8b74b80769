// graphcap/detail/body_streams.hpp - the streams conditional bodies are captured on: owned by
// graphcap, one per body in capture at a time, reused afterwards.
//
// A body is captured into its body graph with cudaStreamBeginCaptureToGraph on a stream that
// nothing else may be capturing on (PyTorch once took body streams from a shared pool that
// another capture was using: #185836). graphcap keeps its own non-blocking streams, per device,
// in a process-wide free list: a lease takes one (creating it when none is free) and gives it
// back when the body's capture has ended. The streams live until the process ends.
#pragma once

#include <graphcap/detail/capture_mode_guard.hpp>
#include <graphcap/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace graphcap::detail {

class body_stream_lease;

/// The free body streams of the process, by device.
class body_streams {
public:
  /// A stream of the current device that no capture uses, for the lease's length.
  static body_stream_lease take();

private:
  friend class body_stream_lease;

  static body_streams& instance() {
    static body_streams* const shared = new body_streams; // NOLINT: used until the process ends
    return *shared;
  }

  cudaStream_t take_for(int device) {
    {
      const std::lock_guard lock{mutex_};
      std::vector<cudaStream_t>& free = free_[device];
      if (!free.empty()) {
        const cudaStream_t stream = free.back();
        free.pop_back();
        return stream;
      }
    }
    const relaxed_capture_mode_guard relaxed; // a global capture is running on this thread
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return stream;
  }

  void give_back(int device, cudaStream_t stream) noexcept {
    try {
      const std::lock_guard lock{mutex_};
      free_[device].push_back(stream);
    } catch (...) { // out of memory: the stream is dropped instead
      const relaxed_capture_mode_guard relaxed;
      ignore(cudaStreamDestroy(stream));
    }
  }

  std::mutex mutex_;
  std::map<int, std::vector<cudaStream_t>> free_;
};

/// One body stream, taken from the free list; given back when the lease ends.
class body_stream_lease {
public:
  body_stream_lease() noexcept = default;
  body_stream_lease(int device, cudaStream_t stream) noexcept : device_(device), stream_(stream) {}
  body_stream_lease(body_stream_lease&& other) noexcept
      : device_(other.device_), stream_(std::exchange(other.stream_, nullptr)) {}
  body_stream_lease& operator=(body_stream_lease&& other) noexcept {
    if (this != &other) {
      release();
      device_ = other.device_;
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  body_stream_lease(const body_stream_lease&) = delete;
  body_stream_lease& operator=(const body_stream_lease&) = delete;
  ~body_stream_lease() { release(); }

  /// The leased stream.
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }

private:
  void release() noexcept {
    if (stream_ != nullptr) {
      body_streams::instance().give_back(device_, std::exchange(stream_, nullptr));
    }
  }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

inline body_stream_lease body_streams::take() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return {device, instance().take_for(device)};
}

} // namespace graphcap::detail
