// graphcap/liveness/detail/free_calls.hpp - the calls that can free memory, as CUPTI's API
// callbacks name them, and the one watch over them that every graphcap::liveness::free_watch
// shares (through cuda/detail/creation_callbacks.hpp: CUPTI has one subscriber per process).
//
// Both domains are listed: the runtime's free (cudaFree) and the driver's (cuMemFree_v2, which
// cuBLAS or a user's driver code calls directly). A call that frees nothing (cudaMemPoolTrimTo,
// a failed cudaFree) still moves the epoch: a needless full check, never a missed one.
#pragma once

#include <graphcap/cuda/detail/creation_callbacks.hpp>
#include <graphcap/liveness/detail/free_epoch.hpp>

#include <cupti.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <span>

namespace graphcap::detail::liveness {

using watched_call = creation_callbacks::api_call;

// NOLINTBEGIN(readability-identifier-length): CUPTI's own names
inline constexpr std::array<watched_call, 35> free_calls{{
    // runtime
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeMipmappedArray_v5000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaThreadExit_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGraphMemTrim_v11040},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLibraryUnload_v12060},
    // driver
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemRelease},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleUnload},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2},
}};
// NOLINTEND(readability-identifier-length)

/// Whether a call's exit must move the epoch. Diagnostics may send every call of both domains to
/// the watcher while they listen: those not listed change nothing.
[[nodiscard]] inline bool frees_memory(CUpti_CallbackDomain domain, CUpti_CallbackId id) noexcept {
  return std::any_of(free_calls.begin(), free_calls.end(), [&](const watched_call& call) {
    return call.domain == domain && call.id == id;
  });
}

/// CUPTI's callback for the listed calls: at the exit, once the memory is gone, the epoch moves
/// (a check racing the call on another thread either ran before the free, or sees the new value).
inline void on_watched_call(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                            const CUpti_CallbackData& call) noexcept {
  if (call.callbackSite == CUPTI_API_EXIT && frees_memory(domain, id)) {
    note_free_ended();
  }
}

/// The watch the free_watch objects share: started by the first, stopped with the last.
class shared_free_watch {
public:
  /// The process's instance. Never destroyed: CUPTI may call back during exit.
  static shared_free_watch& instance() {
    static shared_free_watch* const shared = new shared_free_watch; // NOLINT: see above
    return *shared;
  }

  /// One more user; CUPTI's answer when the watch could not start (nothing held then).
  CUptiResult join() noexcept {
    const std::lock_guard lock(mutex_);
    if (users_ == 0) {
      const CUptiResult started =
          creation_callbacks::instance().watch_calls(free_calls, &on_watched_call);
      if (started != CUPTI_SUCCESS) {
        return started;
      }
      note_watch_toggled(); // odd: frees are seen from here on
    }
    ++users_;
    return CUPTI_SUCCESS;
  }

  /// One user fewer; the last one stops the watch.
  void leave() noexcept {
    const std::lock_guard lock(mutex_);
    if (users_ == 0) {
      return;
    }
    if (--users_ == 0) {
      note_watch_toggled(); // even: nothing is trusted until a watch starts again
      creation_callbacks::instance().stop_watching_calls();
    }
  }

private:
  shared_free_watch() = default;
  std::mutex mutex_;
  unsigned users_ = 0;
};

} // namespace graphcap::detail::liveness
