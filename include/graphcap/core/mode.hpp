// graphcap/core/mode.hpp - the Mode policy: which cudaStreamCaptureMode a capture uses.
//
// The mode says which *other* CUDA calls are refused while the capture is running, because they
// could silently break it (cudaMalloc may synchronize, a synchronize would wait on work that the
// capture never issues):
//   mode::global        refused on every thread that has not opted out (torch's default);
//   mode::thread_local_ refused only on the capturing thread: what servers and data loaders need,
//                       since their other threads keep allocating and synchronizing;
//   mode::relaxed       never refused: you promise that no such call touches the capture.
// The value goes straight into cudaStreamBeginCapture; a mode is a type with no state.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>

#include <cuda_runtime_api.h>

namespace graphcap::mode {

/// A mode of value `Value`; the modes below derive from it.
template <cudaStreamCaptureMode Value>
struct basic_mode {
  using policy_category = policy_kind::mode;            ///< the Mode kind
  static constexpr cudaStreamCaptureMode value = Value; ///< what cudaStreamBeginCapture gets
};

// Distinct structs rather than aliases, so that diagnostics print `graphcap::mode::global`.

/// Unsafe calls fail on every thread while the capture runs (cudaStreamCaptureModeGlobal).
struct global : basic_mode<cudaStreamCaptureModeGlobal> {};
/// Unsafe calls fail only on the capturing thread (cudaStreamCaptureModeThreadLocal).
/// The trailing underscore is there because `thread_local` is a C++ keyword.
struct thread_local_ : basic_mode<cudaStreamCaptureModeThreadLocal> {};
/// Unsafe calls never fail (cudaStreamCaptureModeRelaxed).
struct relaxed : basic_mode<cudaStreamCaptureModeRelaxed> {};

} // namespace graphcap::mode
