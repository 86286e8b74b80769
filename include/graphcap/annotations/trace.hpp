// graphcap/annotations/trace.hpp - kernel executions (kernel_record, as CUPTI's activity records
// report them) and the Chrome trace writer that puts them in lanes named by their annotations
// (write_chrome_trace). Recording them is trace_recorder's (annotations/trace_recorder.hpp).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/annotations/json.hpp>
#include <graphcap/annotations/values.hpp>
#include <graphcap/cuda/detail/graph_queries.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace graphcap {

/// One kernel execution, as CUPTI's activity records report it.
struct kernel_record {
  std::string name;                ///< the kernel's (mangled) name
  std::uint64_t start_ns = 0;      ///< when it started: a GPU timestamp, nanoseconds
  std::uint64_t end_ns = 0;        ///< when it ended: a GPU timestamp, nanoseconds
  std::uint32_t device = 0;        ///< the device it ran on
  std::uint32_t stream = 0;        ///< CUPTI's id of the stream it ran on
  std::uint64_t graph_node_id = 0; ///< the replayed node's id; 0: not launched from a graph
  std::uint32_t graph_id = 0;      ///< the executable graph's id (0: not from a graph)
};

namespace detail {

/// The lane a kernel goes to: its region's name (or its key/values), else where it came from.
template <class = void>
std::string lane_of(const kernel_record& kernel, const node_annotation* annotation) {
  if (annotation != nullptr && !annotation->values.empty()) {
    if (!annotation->name().empty()) {
      return std::string{annotation->name()};
    }
    std::string lane;
    for (const auto& [key, value] : annotation->values) {
      lane.append(lane.empty() ? "" : ", ").append(key).append("=").append(value);
    }
    return lane;
  }
  if (kernel.graph_node_id != 0) {
    return "graph (unannotated)";
  }
  return "stream " + std::to_string(kernel.stream);
}

} // namespace detail

/// Writes `kernels` as a Chrome trace (JSON; opens in Perfetto and chrome://tracing): one lane
/// (thread) per annotation name, the kernel's annotation in its args. Kernels of one name that
/// overlap in time (parallel branches) get lanes of their own, "attention (2)", since a lane's
/// slices must nest. Times start at 0 us.
template <class = void>
void write_chrome_trace(std::ostream& out, const std::vector<kernel_record>& kernels,
                        const std::vector<node_annotation>& annotations) {
  std::unordered_map<std::uint64_t, const node_annotation*> by_id;
  for (const node_annotation& node : annotations) {
    if (node.id != 0) {
      by_id.emplace(node.id, &node);
    }
  }
  std::vector<const kernel_record*> order;
  order.reserve(kernels.size());
  for (const kernel_record& kernel : kernels) {
    order.push_back(&kernel);
  }
  std::stable_sort(order.begin(), order.end(), [](const kernel_record* a, const kernel_record* b) {
    return a->start_ns < b->start_ns;
  });
  const std::uint64_t origin = order.empty() ? 0 : order.front()->start_ns;
  struct lane {
    std::uint32_t device = 0;
    std::string base;  // the annotation's name
    std::string title; // base, or "base (k)" for the k-th parallel lane of that name
    std::uint64_t busy_until = 0;
  };
  std::vector<lane> lanes; // tid = index + 1, in order of first use
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  const char* separator = "\n";
  for (const kernel_record* kernel : order) {
    const auto found = kernel->graph_node_id != 0 ? by_id.find(kernel->graph_node_id) : by_id.end();
    const node_annotation* annotation = found != by_id.end() ? found->second : nullptr;
    std::string base = detail::lane_of(*kernel, annotation);
    std::size_t tid = 0;
    std::size_t same_name = 0;
    for (; tid < lanes.size(); ++tid) {
      if (lanes[tid].device == kernel->device && lanes[tid].base == base) {
        ++same_name;
        if (lanes[tid].busy_until <= kernel->start_ns) {
          break;
        }
      }
    }
    if (tid == lanes.size()) {
      std::string title = same_name == 0 ? base : base + " (" + std::to_string(same_name + 1) + ")";
      lanes.push_back({kernel->device, std::move(base), std::move(title), 0});
    }
    lanes[tid].busy_until = std::max(lanes[tid].busy_until, kernel->end_ns);
    out << separator << "{\"name\": ";
    detail::write_json_string(out, detail::demangled(kernel->name.c_str()));
    out << ", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": " << kernel->device
        << ", \"tid\": " << tid + 1 << ", \"ts\": ";
    detail::write_microseconds(out, kernel->start_ns - origin);
    out << ", \"dur\": ";
    detail::write_microseconds(
        out, kernel->end_ns >= kernel->start_ns ? kernel->end_ns - kernel->start_ns : 0);
    out << ", \"args\": {\"graph node id\": " << kernel->graph_node_id
        << ", \"stream\": " << kernel->stream;
    if (annotation != nullptr) {
      for (const auto& [key, value] : annotation->values) {
        out << ", ";
        detail::write_json_string(out, key);
        out << ": ";
        detail::write_json_string(out, value);
      }
    }
    out << "}}";
    separator = ",\n";
  }
  std::unordered_set<std::uint32_t> named_devices;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const std::uint32_t device = lanes[i].device;
    if (named_devices.insert(device).second) {
      out << separator << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << device
          << ", \"args\": {\"name\": \"GPU " << device << "\"}}";
      separator = ",\n";
    }
    out << separator << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << device
        << ", \"tid\": " << i + 1 << ", \"args\": {\"name\": ";
    detail::write_json_string(out, lanes[i].title);
    out << "}},\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": " << device
        << ", \"tid\": " << i + 1 << ", \"args\": {\"sort_index\": " << i + 1 << "}}";
  }
  out << "\n]}\n";
}

} // namespace graphcap
