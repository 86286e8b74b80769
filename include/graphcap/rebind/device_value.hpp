// graphcap/rebind/device_value.hpp - a scalar that changes between replays without recapture
// or patch: the graph's kernels read it through its device address, and set() writes the next
// value in stream order (<graphcap/rebind.hpp>).
//
//   graphcap::device_value<int> length{1024};
//   step.capture(stream, [&](cudaStream_t s) { attention<<<g, b, 0, s>>>(x, length.get()); });
//   length.set(next_length, stream); // one 4-byte copy, ordered before the replay
//   step.replay(stream);
//
// The other way, a kernel parameter patched in the executable, costs one set-params call per node
// that reads it (about 0.3-0.5 us each on the H200) and is what graphcap::rebinder does for
// addresses; a value read through memory costs one small copy however many nodes read it.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/stream_ref.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <type_traits>
#include <utility>

namespace graphcap {

/// A value of T in device memory that kernels read through get(); set() changes it between
/// replays, in stream order, with no recapture and no patch of the graph. Owns its memory
/// (move-only). T is copied bytewise.
template <class T>
class device_value {
  static_assert(std::is_trivially_copyable_v<T>,
                "graphcap::device_value<T> copies T bytewise to the device: T must be trivially "
                "copyable");

public:
  /// Allocates the value in device memory and writes `initial` there (synchronously).
  explicit device_value(const T& initial = T{}) {
    detail::check(cudaMalloc(reinterpret_cast<void**>(&device_), sizeof(T)), "cudaMalloc");
    const cudaError_t status = cudaMemcpy(device_, &initial, sizeof(T), cudaMemcpyHostToDevice);
    if (status != cudaSuccess) [[unlikely]] {
      detail::ignore(cudaFree(device_));
      detail::throw_cuda(status, "graphcap::device_value: cudaMemcpy");
    }
    last_ = initial;
  }
  ~device_value() {
    if (device_ != nullptr) {
      detail::ignore(cudaFree(device_));
    }
  }
  /// Takes `other`'s memory; `other` holds none afterwards.
  device_value(device_value&& other) noexcept
      : device_(std::exchange(other.device_, nullptr)), last_(other.last_) {}
  /// Frees this value's memory and takes `other`'s.
  device_value& operator=(device_value&& other) noexcept {
    if (this != &other) {
      if (device_ != nullptr) {
        detail::ignore(cudaFree(device_));
      }
      device_ = std::exchange(other.device_, nullptr);
      last_ = other.last_;
    }
    return *this;
  }
  device_value(const device_value&) = delete;
  device_value& operator=(const device_value&) = delete;

  /// The device address kernels read the value from (what a capture bakes in).
  [[nodiscard]] T* get() const noexcept { return device_; }

  /// Writes `value` on `stream`: replays enqueued on it afterwards read it, those enqueued before
  /// read the old one. One host-to-device copy of sizeof(T) bytes from pageable memory, which
  /// CUDA stages before the call returns (the caller's `value` may go at once). Not during a
  /// capture of `stream` (state_error): the copy would become a node of the graph.
  void set(const T& value, stream_ref stream) {
    require_memory();
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    detail::check(cudaStreamIsCapturing(stream.get(), &capturing), "cudaStreamIsCapturing");
    if (capturing != cudaStreamCaptureStatusNone) [[unlikely]] {
      throw state_error("graphcap::device_value::set: the stream is capturing; set the value "
                        "before or after the capture, not inside it (the copy would become a "
                        "node of the graph)");
    }
    detail::check(cudaMemcpyAsync(device_, &value, sizeof(T), cudaMemcpyHostToDevice, stream.get()),
                  "graphcap::device_value::set: cudaMemcpyAsync");
    last_ = value;
  }

  /// The value last given to the constructor or set() (what the device holds once the stream
  /// has run up to that set()).
  [[nodiscard]] const T& last_set() const noexcept { return last_; }

private:
  void require_memory() const {
    if (device_ == nullptr) [[unlikely]] {
      throw state_error("graphcap::device_value: used after it was moved from");
    }
  }

  T* device_ = nullptr;
  T last_{};
};

} // namespace graphcap
