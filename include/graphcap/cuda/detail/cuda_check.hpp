// graphcap/cuda/detail/cuda_check.hpp - turning CUDA status codes into graphcap exceptions.
//
// The success path is one compare and a predicted branch; everything that builds a message lives
// in cold, non-inlined functions so that it stays out of the caller's hot loop.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <string_view>

namespace graphcap::detail {

/// What a user most likely did to get `code`, in words that say what to change.
constexpr std::string_view hint_for(cudaError_t code) noexcept {
  switch (code) {
  case cudaErrorInsufficientDriver:
  case cudaErrorNoDevice:
    return "no usable CUDA driver or GPU on this machine; graphs need a GPU to capture and replay";
  case cudaErrorStreamCaptureUnsupported:
    return "an operation not permitted during stream capture (cudaMalloc, a synchronize, a query "
           "of a capturing stream, or a capture on the legacy default stream) was called; move it "
           "out of the capture, or use mode::thread_local_ / mode::relaxed if another thread made "
           "it";
  case cudaErrorStreamCaptureInvalidated:
    return "the capture was invalidated by an earlier operation not permitted during capture "
           "(cudaMalloc, a synchronizing call, or another thread's unsafe call under mode::global)";
  case cudaErrorStreamCaptureUnjoined:
    return "work was forked to another stream during the capture and never joined back: record an "
           "event on each forked stream and cudaStreamWaitEvent the capture stream on it before "
           "the capture ends";
  case cudaErrorStreamCaptureUnmatched:
    return "the capture was ended on a stream other than the one it began on";
  case cudaErrorStreamCaptureWrongThread:
    return "the capture was ended from another thread; under mode::global and mode::thread_local_ "
           "a capture must end on the thread that began it (or use mode::relaxed)";
  case cudaErrorStreamCaptureImplicit:
    return "a blocking capture stream met work on the legacy default stream; capture on a stream "
           "created with cudaStreamNonBlocking";
  case cudaErrorStreamCaptureIsolation:
    return "the capture depends on work outside it (an event recorded outside the capture)";
  case cudaErrorStreamCaptureMerge:
    return "two separate captures were merged through an event wait";
  case cudaErrorIllegalState:
    return "the stream is already capturing: graphcap does not join another capture (the "
           "blocks of its pool would belong to a graph that is never replayed); to put a graph "
           "inside another capture, capture it on its own stream with keep_graph and add it "
           "with graphcap::embed(cap, graph) (<graphcap/piecewise.hpp>)";
  case cudaErrorInvalidResourceHandle:
    return "a stream, event or graph handle is invalid or was destroyed, or belongs to another "
           "device";
  case cudaErrorMemoryAllocation:
    return "out of device memory";
  default:
    return {};
  }
}

/// Throws Error for `code` without touching CUDA: for failures graphcap detects itself, where
/// the runtime's last error is the user's business.
template <class Error = cuda_error>
GRAPHCAP_COLD [[noreturn]] void throw_error(cudaError_t code, std::string_view call,
                                            std::string_view hint = {}) {
  throw Error(code, call, hint.empty() ? hint_for(code) : hint);
}

/// Clears the runtime's last error if it is `code`: the one a runtime call of graphcap's that
/// just failed with `code` left (CUDA keeps one per thread, and a failing call overwrites it).
/// Another pending error is the user's, which no call of graphcap's replaced (a driver call
/// sets none, nor does a failure graphcap found itself): it is left alone.
inline void clear_own_error(cudaError_t code) noexcept {
  if (cudaPeekAtLastError() == code) {
    static_cast<void>(cudaGetLastError());
  }
}

/// Throws Error for a failed CUDA runtime call, after clearing the last error that call set
/// (clear_own_error): graphcap never leaves a status of its own behind for an unrelated
/// cudaGetLastError to find, and never takes a user's pending error it did not cause. For a
/// failure no runtime call reported (a driver call, a refusal of graphcap's), throw_error.
template <class Error = cuda_error>
GRAPHCAP_COLD [[noreturn]] void throw_cuda(cudaError_t code, std::string_view call,
                                           std::string_view hint = {}) {
  clear_own_error(code);
  throw_error<Error>(code, call, hint);
}

/// check(cudaCall(...), "cudaCall"): throws cuda_error unless the call succeeded.
inline void check(cudaError_t code, std::string_view call) {
  if (code != cudaSuccess) [[unlikely]] {
    throw_cuda(code, call);
  }
}

/// For destructors and cleanup after an error: never throws, and clears the last error the
/// failed call left (clear_own_error; a sticky error stays, as CUDA keeps it).
inline void ignore(cudaError_t code) noexcept {
  if (code != cudaSuccess) [[unlikely]] {
    clear_own_error(code);
  }
}

} // namespace graphcap::detail
