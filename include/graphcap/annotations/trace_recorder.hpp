// graphcap/annotations/trace_recorder.hpp - trace_recorder: CUPTI's kernel activity, collected
// from its construction to stop(), written as a Chrome trace in lanes named by annotations; and
// the activity buffers CUPTI fills meanwhile (its callbacks and their one piece of state).
//
// While a recorder records, the registry keeps the annotations of executables that go away
// (annotations/registry.hpp), so that a graph reset or destroyed during a recording still names
// its kernels. At stop() the recorder takes the annotations of the executables its kernels ran
// in, and the registry drops the rest of what it kept.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/annotations/json.hpp>
#include <graphcap/annotations/notices.hpp>
#include <graphcap/annotations/registry.hpp>
#include <graphcap/annotations/trace.hpp>
#include <graphcap/annotations/values.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/cupti.hpp>
#include <graphcap/error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace graphcap {
namespace detail {

/// Where CUPTI's activity buffers land while a trace_recorder runs (CUPTI calls back on its own
/// thread, into plain functions: this is their only state).
struct activity_sink {
  std::mutex mutex;                   ///< guards records and callbacks_registered
  std::vector<kernel_record> records; ///< what the buffers held, since the recorder started
  bool callbacks_registered = false;  ///< CUPTI has our buffer callbacks (once per process)
  std::atomic<bool> recording{false}; ///< a recorder holds the process's one slot
};

/// The process's sink.
template <class = void>
activity_sink& sink() {
  static activity_sink instance;
  return instance;
}

/// The size of each activity buffer graphcap gives CUPTI.
inline constexpr std::size_t activity_buffer_bytes = std::size_t{4} << 20U;
/// The alignment CUPTI requires of activity buffers.
inline constexpr std::size_t activity_buffer_alignment = 8;

/// CUPTI asks for a buffer to fill with activity records.
template <class = void>
void CUPTIAPI activity_buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records) {
  // NOLINTNEXTLINE: CUPTI owns the buffer until it hands it back to activity_buffer_completed
  *buffer = static_cast<std::uint8_t*>(
      std::aligned_alloc(activity_buffer_alignment, activity_buffer_bytes));
  *size = *buffer == nullptr ? 0 : activity_buffer_bytes;
  *max_records = 0;
}

/// CUPTI hands a filled buffer back: its kernel records go to the sink, the buffer is freed.
template <class = void>
void CUPTIAPI activity_buffer_completed(CUcontext /*context*/, std::uint32_t /*stream*/,
                                        std::uint8_t* buffer, std::size_t /*size*/,
                                        std::size_t valid_size) {
  try {
    std::vector<kernel_record> kernels;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
        continue;
      }
      // NOLINTNEXTLINE: CUPTI's records are told apart by their kind
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      kernels.push_back({.name = kernel->name != nullptr ? kernel->name : "",
                         .start_ns = kernel->start,
                         .end_ns = kernel->end,
                         .device = kernel->deviceId,
                         .stream = kernel->streamId,
                         .graph_node_id = kernel->graphNodeId,
                         .graph_id = kernel->graphId});
    }
    activity_sink& target = sink();
    const std::lock_guard lock{target.mutex};
    target.records.insert(target.records.end(), kernels.begin(), kernels.end());
  } catch (...) { // on CUPTI's thread: nothing may escape; the trace lacks this buffer
  }
  std::free(buffer); // NOLINT: from aligned_alloc above
}

} // namespace detail

/// Collects CUPTI's kernel activity from construction to stop(): replay annotated graphs in
/// between, then write_chrome_trace(). One recorder at a time per process. Where CUPTI is held
/// by another tool (or absent) the recorder is unavailable: it records nothing, says so once,
/// and never throws for that reason.
template <class = void>
class basic_trace_recorder {
public:
  /// Starts recording (state_error if another recorder records in this process).
  basic_trace_recorder() {
    detail::activity_sink& target = detail::sink();
    if (target.recording.exchange(true)) {
      throw state_error(
          "graphcap: a basic_trace_recorder is already recording in this process; stop() "
          "or destroy it before starting another");
    }
    owns_recording_ = true;
    const CUptiResult probe = detail::cupti_probe();
    if (probe != CUPTI_SUCCESS) {
      unavailable(probe);
      return;
    }
    {
      const std::lock_guard lock{target.mutex};
      target.records.clear();
      if (!target.callbacks_registered) {
        const CUptiResult registered = cuptiActivityRegisterCallbacks(
            detail::activity_buffer_requested, detail::activity_buffer_completed);
        if (registered != CUPTI_SUCCESS) {
          unavailable(registered);
          return;
        }
        target.callbacks_registered = true;
      }
    }
    detail::registry().begin_recording(); // before the first kernel can be recorded
    keeping_annotations_ = true;
    const CUptiResult enabled = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (enabled != CUPTI_SUCCESS) {
      unavailable(enabled);
      return;
    }
    recording_ = true;
  }

  basic_trace_recorder(const basic_trace_recorder&) = delete; ///< one recorder, not copied
  basic_trace_recorder&
  operator=(const basic_trace_recorder&) = delete;                  ///< one recorder, not copied
  basic_trace_recorder(basic_trace_recorder&&) = delete;            ///< stays where it records
  basic_trace_recorder& operator=(basic_trace_recorder&&) = delete; ///< stays where it records

  /// Stops (errors swallowed: call stop() to see them).
  ~basic_trace_recorder() {
    try {
      stop();
    } catch (...) { // a destructor never throws; stop() explicitly to see failures
    }
    release();
  }

  /// False where CUPTI cannot record (held by another tool); reason() says why.
  [[nodiscard]] bool available() const noexcept { return reason_.empty(); }
  /// Why the recorder is unavailable ("" when it is available).
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

  /// Waits for the device (cudaDeviceSynchronize: not during a capture), stops recording and
  /// collects what CUPTI buffered, with the annotations of the executables the kernels ran in
  /// (annotations()); the registry drops what it kept for the recording. Idempotent.
  void stop() {
    if (!recording_) {
      return;
    }
    recording_ = false;
    const cudaError_t synced = cudaDeviceSynchronize();
    static_cast<void>(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    static_cast<void>(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    {
      detail::activity_sink& target = detail::sink();
      const std::lock_guard lock{target.mutex};
      kernels_ = std::move(target.records);
      target.records.clear();
    }
    std::sort(kernels_.begin(), kernels_.end(), [](const kernel_record& a, const kernel_record& b) {
      return a.start_ns < b.start_ns;
    });
    try {
      keep_annotations_of_kernels();
    } catch (...) { // out of memory: the recording ends all the same
      release();
      throw;
    }
    release();
    detail::check(synced, "cudaDeviceSynchronize (basic_trace_recorder::stop)");
  }

  /// The kernels recorded (after stop()), by start time.
  [[nodiscard]] const std::vector<kernel_record>& kernels() const noexcept { return kernels_; }

  /// The annotations of the executables the recorded kernels ran in, by id, as stop() found them
  /// (those of executables gone during the recording included): what write_chrome_trace uses.
  [[nodiscard]] std::vector<node_annotation> annotations() const {
    std::vector<node_annotation> all;
    for (const detail::annotation_registry::list& executable : annotations_) {
      all.insert(all.end(), executable->begin(), executable->end());
    }
    return all; // lists_of gave them by executable id, each sorted by id
  }

  /// Writes the recorded kernels as a Chrome trace, in lanes named by annotations(). Stops first
  /// if still recording.
  void write_chrome_trace(const std::string& path) {
    stop();
    std::ofstream file;
    detail::open_for_writing(file, path, "the trace");
    graphcap::write_chrome_trace(file, kernels_, annotations());
    if (!file.flush()) {
      throw error("graphcap: writing the trace to '" + path + "' failed (disk full?)");
    }
  }

private:
  /// Takes the registry's lists of the executables the kernels ran in (a replayed node's id holds
  /// its executable's id in its upper half).
  void keep_annotations_of_kernels() {
    std::vector<std::uint32_t> exec_ids;
    for (const kernel_record& kernel : kernels_) {
      if (kernel.graph_node_id != 0) {
        exec_ids.push_back(static_cast<std::uint32_t>(kernel.graph_node_id >> 32U));
      }
    }
    std::sort(exec_ids.begin(), exec_ids.end());
    exec_ids.erase(std::unique(exec_ids.begin(), exec_ids.end()), exec_ids.end());
    annotations_ = detail::registry().lists_of(exec_ids);
  }

  void unavailable(CUptiResult result) {
    release(); // first: building the reason may run out of memory
    reason_ = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                  ? "CUPTI is held by another tool (compute-sanitizer, Nsight Systems or Compute, "
                    "cuda-gdb): " +
                        detail::cupti_result_name(result) + "; no trace is recorded"
                  : "CUPTI cannot record activity: " + detail::cupti_result_name(result) +
                        "; no trace is recorded";
    detail::notice_once(reason_);
  }

  /// Ends what the constructor began: the registry's keeping, the process's recorder slot.
  void release() noexcept {
    if (keeping_annotations_) {
      keeping_annotations_ = false;
      detail::registry().end_recording();
    }
    if (owns_recording_) {
      owns_recording_ = false;
      detail::sink().recording.store(false);
    }
  }

  std::vector<kernel_record> kernels_;
  std::vector<detail::annotation_registry::list> annotations_;
  std::string reason_;
  bool recording_ = false;
  bool owns_recording_ = false;
  bool keeping_annotations_ = false;
};
/// What to name: basic_trace_recorder<> (a template only so that its bodies compile where used).
using trace_recorder = basic_trace_recorder<>;

} // namespace graphcap
