// graphcap/inspection/verify.hpp - does the replay compute what eager execution computes?
//
//   #include <graphcap/verify.hpp>
//
//   graph.capture([&](cudaStream_t s) { forward(x, y, s); });
//   graphcap::verify(graph, [&](cudaStream_t s) { forward(x, y, s); },
//                    graphcap::output(y, "y")).require();         // throws verify_error if not
//
// verify() runs `work` eagerly (outside any capture) on the options' stream, synchronizes, keeps
// a host copy of every output (in host memory kept per thread for the next call, unless
// verify_options::keep_host_copies is false: fresh pages cost more than the copies), poisons the
// outputs (0xFF bytes by default: NaN for floats, -1 for signed integers), replays the graph on
// the same stream, copies them back and compares (outputs of 1 MiB and more: the eager copy's
// poison count runs on a helper thread while the replay and its copy run). The report says per
// output whether the replay matched (bit-equal, or for floating-point elements within |replay -
// eager| <= atol + rtol * |eager|), the first differing index with both values, and the largest
// absolute and relative differences. A stale pointer baked into the graph, an output the graph does
// not write (it keeps the poison) and non-reproducible arithmetic all show up here. The graph
// itself is never changed (a keep_graph graph not yet instantiated is instantiated by the replay,
// as by any replay); every output is left as the replay wrote it. The lean core never includes this
// header.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/stream_ref.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/inspection/detail/verify_buffers.hpp>
#include <graphcap/inspection/detail/verify_compare.hpp>
#include <graphcap/inspection/verify_report.hpp>
#include <graphcap/pool/buffer.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

/// How verify() runs and compares.
struct verify_options {
  /// Floating-point elements match when |replay - eager| <= atol + rtol * |eager|.
  double atol = 0.0;
  /// See atol. Both 0 (the default): values must be equal (+0 and -0 are; NaN never is).
  double rtol = 0.0;
  /// The byte written over every output before the replay (0xFF: NaN for floats).
  unsigned char poison = 0xFF;
  /// Where the eager work, the poisoning and the replay run (default: the legacy stream).
  stream_ref stream{};
  /// Keep the two host copies of the outputs for the next verify() on this thread (the default):
  /// a later check copies into memory already mapped instead of faulting in fresh pages, which
  /// at 1 Mi floats cost more than the copies and the compare together. They grow to twice the
  /// output bytes of the largest check made on the thread and are freed when it exits. false:
  /// this call's copies are freed on return, and so are those earlier calls kept.
  bool keep_host_copies = true;
};

/// One output of a verify(): `count` objects of T at `data`, in device memory, and a name for
/// the report. Made by graphcap::output(...); buffer<T> and std::span<T> also convert to one.
template <class T>
struct verify_output {
  static_assert(!std::is_const_v<T>,
                "graphcap: a verify() output must be writable: verify() poisons it before the "
                "replay (give a std::span<T>, not std::span<const T>)");
  static_assert(std::is_trivially_copyable_v<T>,
                "graphcap: a verify() output's elements must be trivially copyable: they are "
                "compared as copied from the device");
  T* data = nullptr;     ///< the first element, in device memory
  std::size_t count = 0; ///< how many elements
  std::string_view name; ///< how the report calls it ("" : by its index only)
};

/// `count` objects of T at `data` (device memory), named `name` in the report.
template <class T>
[[nodiscard]] verify_output<T> output(T* data, std::size_t count, std::string_view name = {}) {
  return {data, count, name};
}
/// The elements of `elements` (device memory), named `name` in the report.
template <class T, std::size_t Extent>
[[nodiscard]] verify_output<T> output(std::span<T, Extent> elements, std::string_view name = {}) {
  return {elements.data(), elements.size(), name};
}
/// The elements of `elements`, named `name` in the report.
template <class T>
[[nodiscard]] verify_output<T> output(const buffer<T>& elements, std::string_view name = {}) {
  return {elements.data(), elements.size(), name};
}

namespace detail {

/// What verify() keeps of one output, whatever its type.
struct verify_slot {
  void* data = nullptr;
  std::size_t bytes = 0;
  std::size_t count = 0;
  std::string name;
  std::string type;
  bool floating = false;
  inspection::compare_function compare = nullptr;
  inspection::poison_count_function count_eager_poison = nullptr;
};

template <class T>
std::string element_type_name() {
  using U = std::remove_cv_t<T>;
  constexpr std::array<std::pair<bool, const char*>, 14> names{{
      {std::is_same_v<U, float>, "float"},
      {std::is_same_v<U, double>, "double"},
      {std::is_same_v<U, long double>, "long double"},
      {std::is_same_v<U, bool>, "bool"},
      {std::is_same_v<U, char>, "char"},
      {std::is_same_v<U, signed char>, "signed char"},
      {std::is_same_v<U, unsigned char>, "unsigned char"},
      {std::is_same_v<U, short>, "short"},
      {std::is_same_v<U, unsigned short>, "unsigned short"},
      {std::is_same_v<U, int>, "int"},
      {std::is_same_v<U, unsigned>, "unsigned"},
      {std::is_same_v<U, long>, "long"},
      {std::is_same_v<U, unsigned long>, "unsigned long"},
      {std::is_same_v<U, long long> || std::is_same_v<U, unsigned long long>,
       std::is_same_v<U, long long> ? "long long" : "unsigned long long"},
  }};
  for (const auto& [matches, name] : names) {
    if (matches) {
      return name;
    }
  }
  return std::to_string(sizeof(T)) + "-byte element";
}

template <class T>
verify_slot make_slot(const verify_output<T>& out) {
  return {static_cast<void*>(out.data),
          out.count * sizeof(T),
          out.count,
          std::string{out.name},
          element_type_name<T>(),
          std::is_floating_point_v<T>,
          &inspection::compare_differences<T>,
          &inspection::count_eager_poison<T>};
}
template <class T>
verify_slot make_slot(const buffer<T>& out) {
  return make_slot(output(out));
}
template <class T, std::size_t Extent>
verify_slot make_slot(std::span<T, Extent> out) {
  return make_slot(output(out));
}

template <class T>
inline constexpr bool is_verify_argument = false;
template <class T>
inline constexpr bool is_verify_argument<verify_output<T>> = true;
template <class T>
inline constexpr bool is_verify_argument<buffer<T>> = true;
template <class T, std::size_t Extent>
inline constexpr bool is_verify_argument<std::span<T, Extent>> = true;

/// Throws std::invalid_argument unless output `index` lies in device (or managed) memory.
template <class = void>
void require_device_memory(const verify_slot& slot, std::size_t index) {
  if (slot.count == 0) {
    return;
  }
  const std::string which = "graphcap: verify(): output " + std::to_string(index) +
                            (slot.name.empty() ? std::string{} : " ('" + slot.name + "')");
  if (slot.data == nullptr) {
    throw std::invalid_argument(which + " is a null pointer with " + std::to_string(slot.count) +
                                " elements: give the device memory the graph writes");
  }
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, slot.data);
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    throw_cuda(status, "cudaPointerGetAttributes",
               which + ": CUDA could not tell where the output lives");
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    throw std::invalid_argument(
        which + " is " +
        (attributes.type == cudaMemoryTypeHost ? "pinned host memory" : "not CUDA memory") +
        ", not device memory: verify() poisons and compares device memory the graph writes; "
        "give the device pointer (a buffer<T>, a span or output(pointer, count) over it)");
  }
}

/// Runs the eager work on `stream`; waits for it (a callable without a stream: the device).
template <class Work>
void run_eagerly(Work&& work, cudaStream_t stream) {
  if constexpr (std::is_invocable_v<Work, cudaStream_t>) {
    static_cast<void>(std::forward<Work>(work)(stream));
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (verify: after the eager work)");
  } else {
    static_cast<void>(std::forward<Work>(work)());
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (verify: after the eager work)");
  }
}

/// Where each output's copy starts in a host buffer (64-byte aligned), and the bytes they take.
template <class = void>
std::size_t copy_offsets(const std::vector<verify_slot>& slots, std::vector<std::size_t>& offsets) {
  constexpr std::size_t alignment = 64;
  std::size_t total = 0;
  offsets.clear();
  for (const verify_slot& slot : slots) {
    offsets.push_back(total);
    total += (slot.bytes + alignment - 1) / alignment * alignment;
  }
  return total;
}

/// Copies every output into `host` at its offset and waits.
template <class = void>
void copy_outputs(const std::vector<verify_slot>& slots, const std::vector<std::size_t>& offsets,
                  std::byte* host, cudaStream_t stream) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].bytes != 0) {
      check(cudaMemcpyAsync(host + offsets[i], slots[i].data, slots[i].bytes,
                            cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync (verify: copying an output)");
    }
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (verify: after the copies)");
}

/// Outputs of at least this many bytes in all have their eager poison counted on a helper thread
/// (count_poison_beside); below it a thread costs more than the count.
inline constexpr std::size_t poison_count_thread_bytes = std::size_t{1} << 20;

/// Runs `replay_and_copy()` and counts each output's eager poison (count_eager_poison) in
/// `counts`: on a helper thread at the same time where the outputs take `bytes` >=
/// poison_count_thread_bytes (the replay's copy into pageable memory holds this thread while the
/// helper counts; how much that saves is measured by bench_verify, not assumed here), else after
/// it. A thread
/// that cannot start leaves the count to this one; one still counting when `replay_and_copy`
/// throws is joined first (the eager copy outlives it).
template <class ReplayAndCopy>
void count_poison_beside(const std::vector<verify_slot>& slots,
                         const std::vector<std::size_t>& offsets, const std::byte* eager,
                         unsigned char poison, std::size_t bytes, std::vector<std::size_t>& counts,
                         ReplayAndCopy&& replay_and_copy) {
  counts.assign(slots.size(), 0);
  const auto count = [&]() noexcept {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      counts[i] = slots[i].count_eager_poison(eager + offsets[i], slots[i].count, poison);
    }
  };
  std::jthread counter;
  if (bytes >= poison_count_thread_bytes) {
    try {
      counter = std::jthread(count);
    } catch (const std::system_error&) { // no thread to be had: this one counts
    }
  }
  std::forward<ReplayAndCopy>(replay_and_copy)();
  if (counter.joinable()) {
    counter.join();
  } else {
    count();
  }
}

/// The steps of verify() once its arguments are slots.
template <class Graph, class Work>
verify_report verify_slots(Graph& graph, Work&& work, const verify_options& options,
                           const std::vector<verify_slot>& slots) {
  if (graph.state() != graph_state::captured && graph.state() != graph_state::instantiated) {
    std::string text{"graphcap: cannot verify() a graph that is "};
    text.append(to_string(graph.state()));
    text += ": capture it first (verify() compares its replay with the eager work)";
    throw state_error(text);
  }
  const cudaStream_t stream = options.stream.get();
  if (is_capturing(stream)) {
    throw state_error("graphcap: verify() was given a stream that is capturing: the eager work, "
                      "the copies and the replay must run outside any capture");
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    require_device_memory(slots[i], i);
  }
  run_eagerly(std::forward<Work>(work), stream);
  // Taken after the eager work (a verify() inside `work` has given the kept copies back by now):
  // no user code runs while this call holds them.
  inspection::copies_lease lease(options.keep_host_copies);
  std::vector<std::size_t> offsets;
  inspection::host_copies& copies = lease.get();
  const std::size_t bytes = copy_offsets(slots, offsets);
  copies.reserve(bytes);
  copy_outputs(slots, offsets, copies.eager(), stream);
  std::vector<std::size_t> eager_poison;
  count_poison_beside(slots, offsets, copies.eager(), options.poison, bytes, eager_poison, [&] {
    for (const verify_slot& slot : slots) {
      if (slot.bytes != 0) {
        check(cudaMemsetAsync(slot.data, options.poison, slot.bytes, stream),
              "cudaMemsetAsync (verify: poisoning an output)");
      }
    }
    graph.replay(stream);
    copy_outputs(slots, offsets, copies.replay(), stream);
  });
  const inspection::compare_settings settings{options.atol, options.rtol, options.poison};
  verify_report report{options.atol, options.rtol, options.poison};
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const verify_slot& slot = slots[i];
    inspection::comparison compared;
    compared.eager_poison = eager_poison[i];
    slot.compare(copies.eager() + offsets[i], copies.replay() + offsets[i], slot.count, settings,
                 compared);
    report.add(output_report{i, slot.name, slot.type, slot.count, slot.floating, compared});
  }
  return report;
}

} // namespace detail

/// Checks a replay against the same work run eagerly: runs `work` eagerly, copies `outputs`,
/// poisons them, replays `graph`, and compares the outputs element by element (with tolerance).
/// `work` takes a cudaStream_t (the options' stream) or nothing (then verify() waits for the
/// whole device). Each output is a buffer<T>, a std::span<T> or graphcap::output(...) over device
/// memory. Throws state_error for a graph without a capture or a capturing stream,
/// std::invalid_argument for an output that is not device memory (naming its index), cuda_error
/// for a failed CUDA call; a mismatch is not an exception: see verify_report::require().
template <class Graph, class Work, class... Outputs>
verify_report verify(Graph& graph, Work&& work, const verify_options& options,
                     Outputs&&... outputs) {
  static_assert(sizeof...(Outputs) > 0,
                "graphcap: verify() needs at least one output to compare: "
                "verify(graph, work, graphcap::output(pointer, count, \"name\"), ...)");
  static_assert((detail::is_verify_argument<std::remove_cvref_t<Outputs>> && ...),
                "graphcap: a verify() output is a graphcap::buffer<T>, a std::span<T> or "
                "graphcap::output(pointer, count, name)");
  static_assert(std::is_invocable_v<Work, cudaStream_t> || std::is_invocable_v<Work>,
                "graphcap: verify() runs its work eagerly, outside any capture: the work must "
                "take a cudaStream_t or nothing (a capture scope exists only during a capture)");
  const std::vector<detail::verify_slot> slots{detail::make_slot(outputs)...};
  return detail::verify_slots(graph, std::forward<Work>(work), options, slots);
}

/// verify() with the default options: bit-equal results, 0xFF poison, the legacy stream.
template <class Graph, class Work, class... Outputs>
requires(!std::is_same_v<std::remove_cvref_t<Outputs>, verify_options> && ...) verify_report
    verify(Graph& graph, Work&& work, Outputs&&... outputs) {
  return verify(graph, std::forward<Work>(work), verify_options{},
                std::forward<Outputs>(outputs)...);
}

} // namespace graphcap
