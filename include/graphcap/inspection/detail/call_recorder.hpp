// graphcap/inspection/detail/call_recorder.hpp - what capture diagnostics record: every runtime and
// driver call made while a capture runs, as CUPTI's API callbacks report them, and the first one
// that broke the capture.
//
// Only diagnostics.hpp includes this header. CUPTI calls back on the thread making the call,
// inside it, at its entry and its exit (whose CUpti_CallbackData holds the result). A runtime
// call calls the driver, and CUPTI reports those driver calls too: only the outermost call of a
// thread is recorded, so each call the program made counts once, under the name it called.
// Captures are told apart by their stream (the first parameter of every begin and end).
#pragma once

#include <graphcap/inspection/offending_call.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace graphcap {

namespace detail::inspection {

/// One capture, from its begin to its end.
template <class = void>
struct basic_capture_record {
  cudaStream_t stream = nullptr;
  bool global_mode = true;              // begun in cudaStreamCaptureModeGlobal
  std::vector<std::thread::id> threads; // threads[0] began it; offending_call::thread - 1
  std::uint64_t calls = 0;
  std::optional<offending_call> capture_failure; // the first call failing with a capture error
  std::optional<offending_call> own_failure;     // the first other failure on the capture's thread
  std::vector<std::pair<std::uint32_t, std::string>> scopes; // open now, innermost last
  std::thread::id ended_by;
  int end_result = 0; // what the end returned

  /// The call that broke it: the first capture error, else the first failure on its thread.
  [[nodiscard]] const std::optional<offending_call>& culprit() const noexcept {
    return capture_failure ? capture_failure : own_failure;
  }
};
using capture_record = basic_capture_record<>;

/// CUDA's capture errors: cudaErrorStreamCaptureUnsupported (900) to ...WrongThread (908), one
/// value in the runtime and the driver.
[[nodiscard]] constexpr bool is_capture_error(int result) noexcept {
  return result >= static_cast<int>(cudaErrorStreamCaptureUnsupported) &&
         result <= static_cast<int>(cudaErrorStreamCaptureWrongThread);
}

/// The captures in progress and the last ones ended, fed by CUPTI's API callbacks.
template <class = void>
class basic_call_recorder {
public:
  /// The process's instance. Never destroyed: a callback may run while the process exits.
  static basic_call_recorder& instance() {
    static basic_call_recorder* const shared = new basic_call_recorder; // NOLINT: see above
    return *shared;
  }

  /// creation_callbacks::api_listener: one entry or exit of a runtime or driver call.
  static void on_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const CUpti_CallbackData& call) noexcept {
    thread_local unsigned runtime_depth = 0; // runtime calls in progress on this thread
    const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (call.callbackSite == CUPTI_API_ENTER) {
      runtime_depth += runtime ? 1U : 0U;
      return;
    }
    if (runtime && runtime_depth != 0) {
      --runtime_depth;
    }
    if (runtime_depth != 0 || (runtime && not_a_status(id))) {
      return; // inside another call of this thread, or a call that returns no status
    }
    const int result = call.functionReturnValue == nullptr
                           ? 0
                           : *static_cast<const int*>(call.functionReturnValue);
    instance().record(runtime, id, call, result);
  }

  /// annot::on opened scope `index` on the capture begun on `stream`.
  void scope_opened(cudaStream_t stream, std::uint32_t index, std::string_view label) noexcept {
    const std::lock_guard lock(mutex_);
    if (capture_record* capture = active_on(stream)) {
      try {
        capture->scopes.emplace_back(index, label);
      } catch (...) { // out of memory: the scope goes unnamed
      }
    }
  }

  /// annot::on closed scope `index` of that capture.
  void scope_closed(cudaStream_t stream, std::uint32_t index) noexcept {
    const std::lock_guard lock(mutex_);
    if (capture_record* capture = active_on(stream)) {
      std::erase_if(capture->scopes, [&](const auto& scope) { return scope.first == index; });
    }
  }

  /// The capture on `stream` a failure asks about: the one still running there (a policy's last
  /// call failed before the end), else the last one this thread ended there.
  [[nodiscard]] std::optional<capture_record> capture_on(cudaStream_t stream) const {
    const std::lock_guard lock(mutex_);
    for (const capture_record& capture : active_) {
      if (capture.stream == stream) {
        return capture;
      }
    }
    const auto me = std::this_thread::get_id();
    for (auto it = ended_.rbegin(); it != ended_.rend(); ++it) {
      if (it->stream == stream && it->ended_by == me) {
        return *it;
      }
    }
    return std::nullopt;
  }

  /// The last capture this thread ended, on any stream.
  [[nodiscard]] std::optional<capture_record> last_ended() const {
    const std::lock_guard lock(mutex_);
    const auto me = std::this_thread::get_id();
    for (auto it = ended_.rbegin(); it != ended_.rend(); ++it) {
      if (it->ended_by == me) {
        return *it;
      }
    }
    return std::nullopt;
  }

private:
  basic_call_recorder() = default;

  static constexpr std::size_t kept_ended = 16; // ended captures remembered, for their errors

  [[nodiscard]] static bool not_a_status(CUpti_CallbackId id) noexcept {
    // cudaGetLastError and cudaPeekAtLastError report an earlier call's status; the error
    // strings return text.
    return id == CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020 ||
           id == CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020 ||
           id == CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020 ||
           id == CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050;
  }

  enum class call_kind : std::uint8_t { begin, begin_to_graph, end, other };

  [[nodiscard]] static call_kind kind_of(bool runtime, CUpti_CallbackId id) noexcept {
    if (runtime) {
      switch (id) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000:
        return call_kind::begin;
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030:
        return call_kind::begin_to_graph;
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000:
        return call_kind::end;
      default:
        return call_kind::other;
      }
    }
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
      return call_kind::begin;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
      return call_kind::begin_to_graph;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
      return call_kind::end;
    default:
      return call_kind::other;
    }
  }

  /// Whether the begin `id` asked for global mode (its parameter struct's mode).
  [[nodiscard]] static bool global_mode(bool runtime, CUpti_CallbackId id, call_kind kind,
                                        const void* params) noexcept {
    if (runtime) {
      return kind == call_kind::begin
                 ? static_cast<const cudaStreamBeginCapture_v10000_params*>(params)->mode ==
                       cudaStreamCaptureModeGlobal
                 : static_cast<const cudaStreamBeginCaptureToGraph_v12030_params*>(params)->mode ==
                       cudaStreamCaptureModeGlobal;
    }
    if (id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture ||
        id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz) {
      return true; // the CUDA 10.0 form, without a mode
    }
    return kind == call_kind::begin
               ? static_cast<const cuStreamBeginCapture_v2_params*>(params)->mode ==
                     CU_STREAM_CAPTURE_MODE_GLOBAL
               : static_cast<const cuStreamBeginCaptureToGraph_params*>(params)->mode ==
                     CU_STREAM_CAPTURE_MODE_GLOBAL;
  }

  void record(bool runtime, CUpti_CallbackId id, const CUpti_CallbackData& call,
              int result) noexcept {
    const call_kind kind = kind_of(runtime, id);
    if (kind == call_kind::other && active_count_.load(std::memory_order_acquire) == 0) {
      return; // no capture runs: nothing to count
    }
    const std::lock_guard lock(mutex_);
    try {
      if (kind == call_kind::begin || kind == call_kind::begin_to_graph) {
        if (result == 0 && call.functionParams != nullptr) {
          began(*static_cast<const cudaStream_t*>(call.functionParams),
                global_mode(runtime, id, kind, call.functionParams));
        }
      } else if (kind == call_kind::end) {
        if (call.functionParams != nullptr) {
          finished(*static_cast<const cudaStream_t*>(call.functionParams), result);
        }
      } else {
        count(runtime, call, result);
      }
    } catch (...) { // out of memory: this call goes unrecorded
    }
  }

  void began(cudaStream_t stream, bool global) { // under mutex_
    capture_record capture;
    capture.stream = stream;
    capture.global_mode = global;
    capture.threads.push_back(std::this_thread::get_id());
    std::erase_if(active_, [&](const capture_record& c) { return c.stream == stream; });
    active_.push_back(std::move(capture));
    active_count_.store(active_.size(), std::memory_order_release);
  }

  void finished(cudaStream_t stream, int result) { // under mutex_
    const auto it = std::find_if(active_.begin(), active_.end(),
                                 [&](const capture_record& c) { return c.stream == stream; });
    if (it == active_.end() || result == static_cast<int>(cudaErrorStreamCaptureWrongThread)) {
      return; // not a capture seen beginning; or one that goes on
    }
    it->ended_by = std::this_thread::get_id();
    it->end_result = result;
    it->scopes.clear();
    if (ended_.size() == kept_ended) {
      ended_.erase(ended_.begin());
    }
    ended_.push_back(std::move(*it));
    active_.erase(it);
    active_count_.store(active_.size(), std::memory_order_release);
  }

  void count(bool runtime, const CUpti_CallbackData& call, int result) { // under mutex_
    const auto me = std::this_thread::get_id();
    for (capture_record& capture : active_) {
      ++capture.calls;
      auto thread = std::find(capture.threads.begin(), capture.threads.end(), me);
      if (thread == capture.threads.end()) {
        thread = capture.threads.insert(thread, me);
      }
      const auto number = static_cast<std::uint32_t>(thread - capture.threads.begin()) + 1;
      if (result == 0) {
        continue;
      }
      // Another thread's call breaks this capture only through CUDA's capture rules: an unsafe
      // call while a global capture runs, or legacy-stream work meeting a blocking capture.
      const bool breaks_it =
          is_capture_error(result) && (number == 1 || capture.global_mode ||
                                       result == static_cast<int>(cudaErrorStreamCaptureImplicit));
      std::optional<offending_call>& slot =
          breaks_it ? capture.capture_failure : capture.own_failure;
      if (slot || (!breaks_it && number != 1)) {
        continue;
      }
      slot = offending_call{function_name(runtime, call.functionName),
                            !runtime,
                            result,
                            capture.calls,
                            number,
                            capture.scopes.empty() ? std::string{} : capture.scopes.back().second};
    }
  }

  /// The name a user calls: a runtime function without the API version CUPTI may append
  /// ("cudaMalloc_v3020"); a driver function as CUPTI names it (cuMemAlloc_v2 is its symbol).
  [[nodiscard]] static std::string function_name(bool runtime, const char* reported) {
    std::string name = reported != nullptr ? reported : "?";
    if (!runtime) {
      return name;
    }
    for (const std::string_view suffix : {"_ptsz", "_ptds"}) {
      const std::size_t at = name.rfind(suffix);
      if (at != std::string::npos) {
        name.erase(at, suffix.size());
      }
    }
    const std::size_t version = name.rfind("_v");
    if (version != std::string::npos && version + 2 < name.size() &&
        name.find_first_not_of("0123456789", version + 2) == std::string::npos) {
      name.erase(version);
    }
    return name;
  }

  [[nodiscard]] capture_record* active_on(cudaStream_t stream) noexcept { // under mutex_
    const auto it = std::find_if(active_.begin(), active_.end(),
                                 [&](const capture_record& c) { return c.stream == stream; });
    return it == active_.end() ? nullptr : &*it;
  }

  mutable std::mutex mutex_;
  std::atomic<std::size_t> active_count_{0}; // active_.size(), read without the lock
  std::vector<capture_record> active_;
  std::vector<capture_record> ended_; // oldest first, at most kept_ended
};
using call_recorder = basic_call_recorder<>;

} // namespace detail::inspection
} // namespace graphcap
