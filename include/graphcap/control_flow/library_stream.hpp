// graphcap/control_flow/library_stream.hpp - point a CUDA library's handle at a stream for one
// scope, and back.
//
//   graphcap::while_(cap, more, [&](auto& body) {
//     graphcap::scoped_library_stream blas_stream{blas, body.stream(), cublasGetStream,
//                                                 cublasSetStream};
//     cublasDaxpy(blas, n, &alpha, x, 1, y, 1);   // captured into the body
//   });                                           // blas is on its old stream again
//
// Library calls (cuBLAS, cuSPARSE, cuFFT, ...) go to the stream their handle holds. Inside a
// conditional body that must be the body's stream, which graphcap destroys when the body's
// capture ends: a handle left pointing at it would send the next call to a destroyed stream.
// This guard takes the library's get/set-stream functions (any `Status get(Handle,
// cudaStream_t*)` and `Status set(Handle, cudaStream_t)` whose success is Status{}: cuBLAS's and
// cuSPARSE's), sets the stream, and restores the previous one when it is destroyed. Note
// cublasSetStream also resets the handle's workspace: set the workspace after the guard.
// The lean core never includes this header.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/stream_ref.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace graphcap {

/// Points a library handle at a stream for the guard's lifetime (see the header comment).
/// Throws graphcap::error, with nothing changed, if the library refuses either call.
template <class Handle, class Status>
class scoped_library_stream {
public:
  using getter = Status (*)(Handle, cudaStream_t*); ///< e.g. cublasGetStream
  using setter = Status (*)(Handle, cudaStream_t);  ///< e.g. cublasSetStream

  /// Remembers `handle`'s stream, then points it at `stream`.
  scoped_library_stream(Handle handle, stream_ref stream, getter get, setter set)
      : handle_(handle), set_(set) {
    if (const Status status = get(handle, &previous_); status != Status{}) {
      refuse("get", status);
    }
    if (const Status status = set(handle, stream.get()); status != Status{}) {
      refuse("set", status);
    }
  }
  scoped_library_stream(const scoped_library_stream&) = delete;
  scoped_library_stream& operator=(const scoped_library_stream&) = delete;
  scoped_library_stream(scoped_library_stream&&) = delete;
  scoped_library_stream& operator=(scoped_library_stream&&) = delete;
  /// Points the handle at its previous stream again (a refusal is ignored: never throws).
  ~scoped_library_stream() { static_cast<void>(set_(handle_, previous_)); }

  /// The stream the handle held before the guard.
  [[nodiscard]] cudaStream_t previous() const noexcept { return previous_; }

private:
  [[noreturn]] static void refuse(const char* which, Status status) {
    throw error(std::string{"graphcap: scoped_library_stream: the library's "} + which +
                "-stream function returned status " +
                std::to_string(static_cast<long long>(status)) +
                " (not success): the handle's stream is unchanged");
  }

  Handle handle_;
  setter set_;
  cudaStream_t previous_ = nullptr;
};

} // namespace graphcap
