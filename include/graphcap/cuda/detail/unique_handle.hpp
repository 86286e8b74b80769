// graphcap/cuda/detail/unique_handle.hpp - move-only owners of CUDA handles, one pointer each.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <utility>

namespace graphcap::detail {

/// Whether `Destroy`, called while another thread runs a global-mode capture, fails and
/// invalidates that capture, so that it needs the relaxed capture-mode guard. Not for
/// cudaGraphDestroy: benchmark/probes/global_mode_unsafe_calls.cu showed it succeed and leave the
/// other thread's capture active, in every mode (H100, driver 580, session 19:
/// docs/results/2026-12-07-h100-session19/probes), where cudaGraphExecDestroy invalidates it.
/// Stream and event destruction were not probed: guarded.
template <class Handle, cudaError_t (*Destroy)(Handle)>
inline constexpr bool destroy_unsafe_in_global_capture = true;
template <>
inline constexpr bool destroy_unsafe_in_global_capture<cudaGraph_t, &cudaGraphDestroy> = false;

/// Owns a CUDA handle and destroys it with `Destroy`, never throwing. A destruction CUDA counts
/// as unsafe during another thread's global-mode capture runs under the relaxed capture-mode
/// guard, so that dropping a graph on one thread cannot invalidate a capture on another.
template <class Handle, cudaError_t (*Destroy)(Handle)>
class unique_handle {
public:
  constexpr unique_handle() noexcept = default;
  constexpr explicit unique_handle(Handle handle) noexcept : handle_(handle) {}
  unique_handle(unique_handle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  unique_handle& operator=(unique_handle&& other) noexcept {
    if (this != &other) {
      reset(std::exchange(other.handle_, nullptr));
    }
    return *this;
  }
  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;
  ~unique_handle() { reset(); }

  [[nodiscard]] constexpr Handle get() const noexcept { return handle_; }
  [[nodiscard]] constexpr explicit operator bool() const noexcept { return handle_ != nullptr; }

  /// Gives up ownership: returns the handle, which the caller must destroy (or not own).
  [[nodiscard]] Handle release() noexcept { return std::exchange(handle_, nullptr); }

  /// Destroys the owned handle (if any) and takes `handle`.
  void reset(Handle handle = nullptr) noexcept {
    if (handle_ != nullptr) {
      if constexpr (destroy_unsafe_in_global_capture<Handle, Destroy>) {
        const relaxed_capture_mode_guard relaxed;
        ignore(Destroy(handle_));
      } else {
        ignore(Destroy(handle_));
      }
    }
    handle_ = handle;
  }

private:
  Handle handle_ = nullptr;
};

using graph_handle = unique_handle<cudaGraph_t, &cudaGraphDestroy>;
using exec_handle = unique_handle<cudaGraphExec_t, &cudaGraphExecDestroy>;
using stream_handle = unique_handle<cudaStream_t, &cudaStreamDestroy>;
using event_handle = unique_handle<cudaEvent_t, &cudaEventDestroy>;

} // namespace graphcap::detail
