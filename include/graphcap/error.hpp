// graphcap/error.hpp - the exceptions graphcap throws.
//
//   error                  base of everything graphcap throws
//   - cuda_error           a CUDA call failed: the call, cudaGetErrorName, the message, a hint
//     - capture_error      a capture could not begin or end (invalidated, unjoined fork, ...)
//     - out_of_memory_error  a pool could not grow during a capture
//   - state_error          the graph was used in a state that does not allow the call
//   - liveness_error       an input of the graph was freed: the replay did not launch
//   - family_key_error     a bad key set, or a request above a family's largest key
//                          (declared with the families: <graphcap/families/family_types.hpp>)
//   - verify_error         a replay disagreed with its work run eagerly
//                          (declared with verify: <graphcap/inspection/verify_report.hpp>)
//   - island_error         an eager island of a piecewise graph threw during replay()
//                          (declared with piecewise graphs: <graphcap/piecewise/island_error.hpp>)
//   - rebind_error         a rebinder cannot move an input (not one, a null or too small target,
//                          a patch CUDA refused, undone): <graphcap/rebind/rebind_error.hpp>
//
// The last four live with their features, so that a program that uses neither compiles neither.
// capture_error derives from cuda_error because every capture failure graphcap reports carries
// the CUDA status that caused it (cudaErrorStreamCaptureUnsupported for a capture on the legacy
// default stream, which graphcap rejects before calling CUDA, mirroring what CUDA would return).
#pragma once

#include <graphcap/config.hpp>

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace graphcap {

/// Base of every exception graphcap throws.
class error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A CUDA runtime or driver call failed.
class cuda_error : public error {
public:
  /// The failure of `call` with `code`; `hint` says what to do (empty: none).
  cuda_error(cudaError_t code, std::string_view call, std::string_view hint = {})
      : error(describe(code, call, hint)), code_(code), call_(call) {}

  /// The status the CUDA call returned.
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }
  /// The CUDA call (or graphcap operation) that failed, e.g. "cudaStreamEndCapture".
  [[nodiscard]] const std::string& call() const noexcept { return call_; }

private:
  static std::string describe(cudaError_t code, std::string_view call, std::string_view hint) {
    std::string text{"graphcap: "};
    text.append(call);
    text += " failed: ";
    text += cudaGetErrorName(code);
    text += " (";
    text += cudaGetErrorString(code);
    text += ")";
    if (!hint.empty()) {
      text += ". Hint: ";
      text.append(hint);
    }
    return text;
  }

  cudaError_t code_;
  std::string call_;
};

/// A stream capture could not begin or end; the graph is left empty and can capture again,
/// and no stream is left capturing.
class capture_error : public cuda_error {
public:
  /// As cuda_error.
  using cuda_error::cuda_error;
};

/// A pool could not get the memory a capture asked for. The message names the bytes asked for
/// and the pool's reserved size; the process and other graphs stay usable.
class out_of_memory_error : public cuda_error {
public:
  /// As cuda_error.
  using cuda_error::cuda_error;
};

/// Before a replay, one or more external inputs of the graph were found freed (or replaced by a
/// new allocation at the same address). Nothing was launched; the message lists each input.
class liveness_error : public error {
public:
  using error::error;
};

/// A call that the graph's current state does not allow (replay before capture, capturing
/// twice without reset, ...). The message names the state and what to do.
class state_error : public error {
public:
  using error::error;
};

} // namespace graphcap
