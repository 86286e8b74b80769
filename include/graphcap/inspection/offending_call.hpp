// graphcap/inspection/offending_call.hpp - graphcap::offending_call, the first call that broke a
// failed capture, as capture diagnostics (<graphcap/diagnostics.hpp>) saw it.
#pragma once

#include <graphcap/config.hpp>

#include <cstdint>
#include <string>

namespace graphcap {

/// The first call that broke a failed capture, as capture diagnostics saw it.
struct offending_call {
  std::string function; ///< what CUPTI calls it: "cudaStreamSynchronize", "cuMemAlloc_v2"
  bool driver = false;  ///< a driver API call (its result is a CUresult)
  int result = 0;       ///< what it returned: a cudaError_t, or a CUresult for a driver call
  /// Its place among the calls made in the process while the capture ran, from 1 (the begin
  /// itself not counted).
  std::uint64_t ordinal = 0;
  /// The thread that made it: 1 for the thread that began the capture, then 2, 3, ... in the
  /// order other threads first called CUDA during the capture.
  std::uint32_t thread = 0;
  std::string scope; ///< the innermost annot::on scope open at the time ("" if none)
};

} // namespace graphcap
