// graphcap/inspection/diagnostics.hpp - capture diagnostics: a failed capture's error names the
// call that broke it. Leaf header; links CUPTI (the graphcap::annotations target).
//
//   {
//     graphcap::capture_diagnostics diagnostics; // on while it lives, outside any capture
//     graph.capture(stream, work);               // throws graphcap::capture_error
//   }
//   // "... Hint: invalidated by cudaStreamSynchronize (call 17 of the capture, thread 1, inside
//   //  scope 'attention'), which returned cudaErrorStreamCaptureUnsupported: synchronizing a
//   //  capturing stream is not allowed ..."
//
// While a capture_diagnostics lives, CUPTI reports every runtime and driver call of the process
// (its API callbacks, through the one subscriber annot::on shares); graphcap counts the calls each
// capture sees and keeps the first that broke it. Off, nothing of this exists: the core holds one
// null pointer (core/detail/diagnosis_hook.hpp) and reads it only when a capture has failed. Where
// another tool holds CUPTI, the error says that diagnostics were unavailable, and why; graphs work
// as without them. The cost while on is a callback per CUDA call: a debugging switch, not one to
// leave on in production. docs/diagnostics.md.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/detail/diagnosis_hook.hpp>
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/creation_callbacks.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/cupti.hpp>
#include <graphcap/inspection/detail/call_recorder.hpp>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace graphcap {

namespace detail {

/// What a call that broke a capture did wrong, in words that say what to change.
template <class = void>
std::string offending_call_reason(const offending_call& call) {
  const std::string_view name = call.function;
  if (call.result == static_cast<int>(cudaErrorStreamCaptureImplicit)) {
    return "work on the legacy default stream while a blocking stream captures would depend on the "
           "capture; issue it on a stream of its own, or capture on a stream created with "
           "cudaStreamNonBlocking";
  }
  if (call.thread != 1 && inspection::is_capture_error(call.result)) {
    return "thread " + std::to_string(call.thread) +
           " is not the thread that began the capture (thread 1), and under mode::global a "
           "call not permitted during capture on any thread invalidates it; make the call outside "
           "the capture, or capture with mode::thread_local_";
  }
  if (name.find("StreamSynchronize") != std::string_view::npos ||
      name.find("StreamQuery") != std::string_view::npos) {
    return "synchronizing or querying a capturing stream is not allowed; synchronize after the "
           "capture ends (a replay can be synchronized)";
  }
  if (name.find("Synchronize") != std::string_view::npos) {
    return "synchronizing during a capture is not allowed; synchronize before it begins or after "
           "it ends";
  }
  if (name.find("Malloc") != std::string_view::npos ||
      name.find("Free") != std::string_view::npos ||
      name.find("MemAlloc") != std::string_view::npos ||
      name.find("HostAlloc") != std::string_view::npos) {
    return "allocating or freeing memory synchronously is not allowed during a capture; allocate "
           "before it, from the graph's pool (cap.allocate), or with cudaMallocAsync";
  }
  if (call.driver && !inspection::is_capture_error(call.result)) {
    return {};
  }
  return std::string{hint_for(static_cast<cudaError_t>(call.result))};
}

/// The name of what `call` returned.
template <class = void>
std::string offending_call_result(const offending_call& call) {
  if (!call.driver ||
      inspection::is_capture_error(call.result)) { // capture errors: one value in both APIs
    return cudaGetErrorName(static_cast<cudaError_t>(call.result));
  }
  return "CUresult " + std::to_string(call.result);
}

/// How a call is named in a capture error: "cudaMalloc (call 3 of the capture, thread 1, inside
/// scope 'attention'), which returned cudaErrorStreamCaptureUnsupported".
template <class = void>
std::string describe(const offending_call& call) {
  std::string text = call.function + " (call " + std::to_string(call.ordinal) +
                     " of the capture, thread " + std::to_string(call.thread);
  if (!call.scope.empty()) {
    text += ", inside scope '" + call.scope + "'";
  }
  return text + "), which returned " + offending_call_result(call);
}

/// The text naming what broke the capture recorded in `capture`, which ended with `status`.
/// `named`: the text names the call that broke it (a capture error, or any failure of the
/// capture's thread when the capture was invalidated); otherwise it says what it saw, and the
/// generic hint follows.
template <class = void>
std::string explain(const inspection::capture_record& capture, cudaError_t status, bool& named) {
  const std::optional<offending_call>& culprit = capture.culprit();
  named = culprit && (capture.capture_failure || status == cudaErrorStreamCaptureInvalidated);
  if (!culprit) {
    return "capture diagnostics saw " + std::to_string(capture.calls) +
           " CUDA calls during the capture, none of which failed";
  }
  if (!named) {
    return "capture diagnostics saw no call fail with a capture error; the first call that "
           "failed during the capture was " +
           describe(*culprit);
  }
  std::string text = status == cudaErrorStreamCaptureInvalidated ? "invalidated by " : "broken by ";
  text += describe(*culprit);
  const std::string reason = offending_call_reason(*culprit);
  if (!reason.empty()) {
    text += ": " + reason;
  }
  return text;
}

/// The switch's shared state: how many are alive, and what CUPTI answered the first.
template <class = void>
struct basic_diagnostics_switch {
  std::mutex mutex;
  unsigned alive = 0;
  CUptiResult cupti = CUPTI_SUCCESS; // CUPTI's answer to the subscription of the first alive

  static basic_diagnostics_switch& instance() {
    static basic_diagnostics_switch* const shared =
        new basic_diagnostics_switch; // NOLINT: never destroyed
    return *shared;
  }
};
/// What to name: basic_diagnostics_switch<> (a template only so that its bodies compile where
/// used).
using diagnostics_switch = basic_diagnostics_switch<>;

/// Why diagnostics are unavailable, for CUPTI's answer `cupti`.
template <class = void>
std::string diagnostics_unavailable(CUptiResult cupti) {
  if (cupti == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    return "capture diagnostics were unavailable: CUPTI's one callback subscriber is held by "
           "another tool or client (compute-sanitizer, Nsight Systems or Compute, cuda-gdb, a "
           "profiler in this process): " +
           cupti_result_name(cupti);
  }
  return "capture diagnostics were unavailable: CUPTI refused its API callbacks: " +
         cupti_result_name(cupti);
}

template <class = void>
std::string explain_end_failure(cudaError_t status, cudaStream_t stream, bool& named) {
  CUptiResult cupti = CUPTI_SUCCESS;
  {
    diagnostics_switch& on = diagnostics_switch::instance();
    const std::lock_guard lock(on.mutex);
    cupti = on.cupti;
  }
  if (cupti != CUPTI_SUCCESS) {
    return diagnostics_unavailable(cupti);
  }
  const std::optional<inspection::capture_record> capture =
      inspection::call_recorder::instance().capture_on(stream);
  if (!capture) {
    return "capture diagnostics did not see this capture begin (they were switched on after it)";
  }
  return explain(*capture, status, named);
}

template <class = void>
void scope_opened(cudaStream_t stream, std::uint32_t index, std::string_view label) noexcept {
  inspection::call_recorder::instance().scope_opened(stream, index, label);
}

template <class = void>
void scope_closed(cudaStream_t stream, std::uint32_t index) noexcept {
  inspection::call_recorder::instance().scope_closed(stream, index);
}

inline constexpr diagnosis_hooks diagnostics_hooks{&explain_end_failure, &scope_opened,
                                                   &scope_closed};

} // namespace detail

/// Capture diagnostics, on while an instance lives (instances share one state: diagnostics stay
/// on until the last is destroyed). Construct and destroy outside any capture on this thread.
template <class = void>
class basic_capture_diagnostics {
public:
  /// Switches diagnostics on: takes CUPTI's subscriber (shared with annot::on) and its runtime
  /// and driver API callbacks. Never throws: where CUPTI refuses, available() is false, and the
  /// capture errors say why.
  basic_capture_diagnostics() noexcept {
    detail::diagnostics_switch& on = detail::diagnostics_switch::instance();
    const std::lock_guard lock(on.mutex);
    if (on.alive++ == 0) {
      static_cast<void>(
          detail::inspection::call_recorder::instance()); // made here, not in a callback
      on.cupti = detail::creation_callbacks::instance().listen_to_api_calls(
          &detail::inspection::call_recorder::on_api_call);
      detail::install_diagnosis(&detail::diagnostics_hooks);
    }
  }
  basic_capture_diagnostics(const basic_capture_diagnostics&) = delete; ///< a scope, not a value
  basic_capture_diagnostics&
  operator=(const basic_capture_diagnostics&) = delete;            ///< a scope, not a value
  basic_capture_diagnostics(basic_capture_diagnostics&&) = delete; ///< a scope, not a value
  basic_capture_diagnostics&
  operator=(basic_capture_diagnostics&&) = delete; ///< a scope, not a value
  /// The last instance switches diagnostics off and gives CUPTI's subscriber back.
  ~basic_capture_diagnostics() {
    detail::diagnostics_switch& on = detail::diagnostics_switch::instance();
    const std::lock_guard lock(on.mutex);
    if (--on.alive == 0) {
      detail::install_diagnosis(nullptr);
      if (on.cupti == CUPTI_SUCCESS) {
        detail::creation_callbacks::instance().stop_api_calls();
      }
      on.cupti = CUPTI_SUCCESS;
    }
  }

  /// True when CUPTI reports the calls: capture errors name the call that broke the capture.
  [[nodiscard]] bool available() const {
    detail::diagnostics_switch& on = detail::diagnostics_switch::instance();
    const std::lock_guard lock(on.mutex);
    return on.cupti == CUPTI_SUCCESS;
  }

  /// Why diagnostics are unavailable (what capture errors say in their place); empty if they are
  /// available.
  [[nodiscard]] std::string unavailable_reason() const {
    detail::diagnostics_switch& on = detail::diagnostics_switch::instance();
    const std::lock_guard lock(on.mutex);
    return on.cupti == CUPTI_SUCCESS ? std::string{} : detail::diagnostics_unavailable(on.cupti);
  }

  /// The call that broke the last capture this thread ended while diagnostics were on (nullopt if
  /// that capture succeeded, or failed with no call failing, or none was seen).
  [[nodiscard]] static std::optional<offending_call> last_offending_call() {
    const std::optional<detail::inspection::capture_record> capture =
        detail::inspection::call_recorder::instance().last_ended();
    if (!capture || capture->end_result == 0) {
      return std::nullopt;
    }
    return capture->culprit();
  }
};
/// What to name: basic_capture_diagnostics<> (a template only so that its bodies compile where
/// used).
using capture_diagnostics = basic_capture_diagnostics<>;

} // namespace graphcap
