// graphcap/detail/conditional_rules.hpp - what control_flow.hpp asks of a capture in progress
// (where the capture stands: its graph and current dependencies), how a body's capture is
// abandoned without destroying the body graph, and CUDA's rule for what a body may hold.
#pragma once

#include <graphcap/annotations/node_type.hpp>
#include <graphcap/config.hpp>
#include <graphcap/detail/capture.hpp>
#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace graphcap::detail {

/// Where a capture stands: the graph it captures into and what the next node depends on.
struct capture_point {
  unsigned long long capture = 0; ///< the capture sequence's id (unique in the process)
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* dependencies = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  std::size_t count = 0;
};

/// Throws capture_error for a CUDA call that failed inside a capture (the capture is then
/// discarded by the scopes as the exception leaves them).
inline void check_in_capture(cudaError_t status, std::string_view call) {
  if (status != cudaSuccess) [[unlikely]] {
    throw_cuda<capture_error>(status, call);
  }
}

/// The capture point of `stream`; capture_error if it is not capturing (the scope has ended, or
/// the capture was invalidated).
inline capture_point capture_point_of(cudaStream_t stream, std::string_view construct) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  capture_point point;
  check_in_capture(cudaStreamGetCaptureInfo(stream, &status, &point.capture, &point.graph,
                                            &point.dependencies, &point.edges, &point.count),
                   "cudaStreamGetCaptureInfo");
  if (status != cudaStreamCaptureStatusActive) [[unlikely]] {
    throw_error<capture_error>(status == cudaStreamCaptureStatusInvalidated
                                   ? cudaErrorStreamCaptureInvalidated
                                   : cudaErrorIllegalState,
                               std::string{"graphcap::"}.append(construct),
                               status == cudaStreamCaptureStatusInvalidated
                                   ? "the capture was invalidated before this call"
                                   : "the scope's stream is not capturing (has the scope ended?)");
  }
  return point;
}

/// What ending a conditional body's capture came to.
enum class body_capture_end : unsigned char {
  ended,       ///< the capture ended into the body graph
  joined_work, ///< it ended after graphcap joined work forked from it and left unjoined
  root_ended,  ///< it was invalidated: ended (CUDA destroyed the body graph), and the outermost
               ///< capture ended with it, its graph kept, never destroyed
  left_open,   ///< it was invalidated and so was the outermost capture: left unended
};

/// Graphs graphcap ended and keeps for the rest of the process because CUDA destroyed one of
/// their bodies (destroying them would crash): one per failure of that kind.
[[nodiscard]] inline std::atomic<std::size_t>& graphs_kept() noexcept {
  static std::atomic<std::size_t> count{0};
  return count;
}

/// The capture status of `stream`, and what its next captured node depends on; false when CUDA
/// could not say.
inline bool capture_status(cudaStream_t stream, cudaStreamCaptureStatus& status,
                           cudaGraph_t* graph, std::vector<cudaGraphNode_t>& waited) noexcept {
  const cudaGraphNode_t* dependencies = nullptr;
  std::size_t count = 0;
  status = cudaStreamCaptureStatusNone;
  if (cudaStreamGetCaptureInfo(stream, &status, nullptr, graph, &dependencies, nullptr, &count) !=
      cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return false;
  }
  try {
    waited.assign(dependencies, dependencies + count);
  } catch (...) { // out of memory
    return false;
  }
  return true;
}

/// Invalidates the capture running on `parent` (a stream synchronization is refused on a
/// capturing stream in every mode, and breaks its capture), so that it ends with an error.
inline void invalidate_capture(cudaStream_t parent) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(parent, &status) == cudaSuccess &&
      status == cudaStreamCaptureStatusActive) {
    ignore(cudaStreamSynchronize(parent));
  }
  static_cast<void>(cudaGetLastError());
}

/// Makes `stream` depend on every node of `graph` that nothing depends on and the stream does
/// not already wait for: work forked to another stream and never joined back. Returns whether
/// there was any; `known` is false when CUDA could not say (then nothing is known joined).
inline bool join_forked_work(cudaStream_t stream, cudaGraph_t graph,
                             const std::vector<cudaGraphNode_t>& waited, bool& known) noexcept {
  known = false;
  try {
    std::size_t node_count = 0;
    std::size_t edge_count = 0;
    if (cudaGraphGetNodes(graph, nullptr, &node_count) != cudaSuccess ||
        cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count) != cudaSuccess) {
      return false;
    }
    std::vector<cudaGraphNode_t> nodes(node_count);
    std::vector<cudaGraphNode_t> from(edge_count);
    std::vector<cudaGraphNode_t> to(edge_count);
    if (cudaGraphGetNodes(graph, nodes.data(), &node_count) != cudaSuccess ||
        cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &edge_count) != cudaSuccess) {
      return false;
    }
    nodes.resize(node_count);
    from.resize(edge_count);
    const auto holds = [](const std::vector<cudaGraphNode_t>& list, cudaGraphNode_t node) {
      for (const cudaGraphNode_t entry : list) {
        if (entry == node) {
          return true;
        }
      }
      return false;
    };
    std::vector<cudaGraphNode_t> unjoined;
    for (const cudaGraphNode_t node : nodes) {
      if (!holds(from, node) && !holds(waited, node)) {
        unjoined.push_back(node);
      }
    }
    if (!unjoined.empty() &&
        cudaStreamUpdateCaptureDependencies(stream, unjoined.data(), nullptr, unjoined.size(),
                                            cudaStreamAddCaptureDependencies) != cudaSuccess) {
      return false;
    }
    known = true;
    return !unjoined.empty();
  } catch (...) { // out of memory: not known
    return false;
  }
}

/// Ends an active capture on `stream` (into `graph`) once forked work is joined; false when it
/// could not be made safe or CUDA refused.
inline bool end_joined(cudaStream_t stream, cudaGraph_t graph,
                       const std::vector<cudaGraphNode_t>& waited, bool& joined,
                       cudaGraph_t& ended) noexcept {
  bool known = false;
  joined = join_forked_work(stream, graph, waited, known) || joined;
  if (!known) {
    static_cast<void>(cudaGetLastError());
    return false; // ending now could fail, and a failed end costs the graph
  }
  ended = nullptr;
  if (cudaStreamEndCapture(stream, &ended) == cudaSuccess) {
    return true;
  }
  static_cast<void>(cudaGetLastError());
  return false;
}

/// Ends the outermost capture (on `root`) early and keeps its graph, which holds a body CUDA
/// destroyed: destroying or instantiating it would crash. Whatever captures inside it still run
/// end later into the kept graph; the scope of `root` then finds its stream not capturing.
inline void end_root_and_keep(cudaStream_t root) noexcept {
  for (int attempt = 0; attempt < 3; ++attempt) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    std::vector<cudaGraphNode_t> waited;
    if (!capture_status(root, status, &graph, waited)) {
      continue;
    }
    if (status == cudaStreamCaptureStatusNone) {
      return;
    }
    bool joined = false;
    cudaGraph_t ended = nullptr;
    if (status == cudaStreamCaptureStatusActive && end_joined(root, graph, waited, joined, ended)) {
      graphs_kept().fetch_add(1, std::memory_order_relaxed);
      return; // `ended` is never destroyed
    }
  }
  static_cast<void>(cudaGetLastError());
}

/// Ends the capture of a conditional body on `stream` (into body `graph`; `parent` is the stream
/// of the scope that added its node, `root` that of the outermost capture) without letting CUDA
/// destroy a body graph under a graph it will destroy again; never throws.
///
/// CUDA 13.0 (driver 580) destroys the graph a capture was into when that capture fails to end
/// (invalidated, or with forked work left unjoined), a body graph too although its node owns it,
/// and destroying the parent graph afterwards crashes, in every order tried
/// (benchmark/probes/body_abandon.cu; docs/reliability.md). So:
///  - forked work left unjoined is joined first (the stream is made to depend on it), and the
///    end succeeds; the user's side stream then stops capturing too;
///  - an invalidated capture under an active outermost one is ended (CUDA destroys its body and
///    releases every stream of its capture), and the outermost capture is ended at once, its
///    graph kept for the rest of the process (graphs_kept());
///  - an invalidated capture under an invalidated outermost one is never ended: the parent's
///    capture is invalidated too (if it was not), and CUDA discards the whole tree when the
///    outermost capture fails to end, the one teardown the probe found safe then. The body's
///    stream must be left as it is (body_stream_lease::keep()).
inline body_capture_end end_body_capture(cudaStream_t stream, cudaGraph_t graph,
                                         cudaStream_t parent, cudaStream_t root) noexcept {
  bool joined = false;
  for (int attempt = 0; attempt < 3; ++attempt) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    std::vector<cudaGraphNode_t> waited;
    if (!capture_status(stream, status, nullptr, waited)) {
      continue; // ask again
    }
    if (status == cudaStreamCaptureStatusNone) {
      return joined ? body_capture_end::joined_work : body_capture_end::ended;
    }
    if (status == cudaStreamCaptureStatusInvalidated) {
      cudaStreamCaptureStatus outer = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(root, &outer) == cudaSuccess &&
          outer == cudaStreamCaptureStatusActive) {
        cudaGraph_t ended = nullptr;
        ignore(cudaStreamEndCapture(stream, &ended)); // fails: CUDA destroys the body graph
        end_root_and_keep(root);
        static_cast<void>(cudaGetLastError());
        return body_capture_end::root_ended;
      }
      break;
    }
    cudaGraph_t ended = nullptr;
    if (end_joined(stream, graph, waited, joined, ended)) {
      return joined ? body_capture_end::joined_work : body_capture_end::ended;
    }
  }
  invalidate_capture(parent);
  static_cast<void>(cudaGetLastError());
  return body_capture_end::left_open;
}

/// "body 0 of while_()" for messages.
inline std::string describe_body(const char* construct, unsigned index) {
  return "body " + std::to_string(index) + " of " + construct + "()";
}

/// Throws the capture_error for a body that returned with work forked from it left unjoined.
GRAPHCAP_COLD [[noreturn]] inline void refuse_unjoined_body(const char* construct,
                                                            unsigned index) {
  throw_error<capture_error>(
      cudaErrorStreamCaptureUnjoined, "graphcap: " + describe_body(construct, index),
      "work forked from the body to another stream (cudaEventRecord on body.stream(), "
      "cudaStreamWaitEvent on the other stream) was not joined back before the body returned; "
      "record an event on that stream and make body.stream() wait for it. graphcap joined it "
      "so that CUDA keeps the body graph, and the capture is discarded");
}

/// Throws the capture_error for a body whose capture CUDA invalidated.
GRAPHCAP_COLD [[noreturn]] inline void refuse_invalidated_body(const char* construct,
                                                               unsigned index,
                                                               cudaStream_t stream) {
  throw_error<capture_error>(
      cudaErrorStreamCaptureInvalidated, "graphcap: " + describe_body(construct, index),
      capture::failure_hint(cudaErrorStreamCaptureInvalidated, stream) +
          "; the whole capture is discarded (CUDA destroys a body graph whose capture fails to "
          "end, so graphcap ends the outermost capture instead: docs/reliability.md)");
}

/// Whether CUDA allows a node of `type` in a conditional body.
[[nodiscard]] constexpr bool allowed_in_body(cudaGraphNodeType type) noexcept {
  return type == cudaGraphNodeTypeKernel || type == cudaGraphNodeTypeMemcpy ||
         type == cudaGraphNodeTypeMemset || type == cudaGraphNodeTypeEmpty ||
         type == cudaGraphNodeTypeGraph || type == cudaGraphNodeTypeConditional;
}

/// "0x7f..." for a graph handle in a message.
inline std::string describe_graph(cudaGraph_t graph) {
  char digits[2 * sizeof(void*) + 3] = {'0', 'x'};
  const auto end = std::to_chars(digits + 2, digits + sizeof digits,
                                 reinterpret_cast<std::uintptr_t>(graph), 16) // NOLINT: printed
                       .ptr;
  return graph == nullptr ? std::string{"(none)"} : std::string{digits, end};
}

/// Throws the capture_error for a node a body may not hold.
GRAPHCAP_COLD [[noreturn]] inline void refuse_body_node(cudaGraphNodeType type,
                                                        const char* construct, unsigned index) {
  std::string message = "body ";
  message += std::to_string(index);
  message += " of ";
  message += construct;
  const std::string_view name = to_string(type); // the names annotations and traces use
  message += name.front() == 'e' || name.front() == 'u' ? "() holds an " : "() holds a ";
  message.append(name);
  message += " node";
  std::string hint =
      "CUDA allows only kernel, memset, memcpy, empty, child-graph and conditional nodes in a "
      "conditional body";
  if (type == cudaGraphNodeTypeMemAlloc || type == cudaGraphNodeTypeMemFree) {
    hint += "; allocate from a slab pool (pool::private_pool, pool::shared, pool::user) or "
            "before the conditional, not with cudaMallocAsync or pool::graph_memory_nodes";
  } else if (type == cudaGraphNodeTypeEventRecord || type == cudaGraphNodeTypeWaitEvent) {
    hint += "; fork and join streams with events inside the body only (those become edges), and "
            "record timing events outside it; libraries that record events (NCCL) cannot run "
            "inside a body";
  } else if (type == cudaGraphNodeTypeHost) {
    hint += "; launch host functions outside the conditional";
  }
  throw_error<capture_error>(cudaErrorStreamCaptureUnsupported,
                             "graphcap: " + message + ", which CUDA does not allow", hint);
}

/// Checks every node of body `graph` (child graphs and nested bodies too) against CUDA's rule.
inline void check_body_rules(cudaGraph_t graph, const char* construct, unsigned index) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  for (const cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
    if (!allowed_in_body(type)) [[unlikely]] {
      refuse_body_node(type, construct, index);
    }
    if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      check(cudaGraphChildGraphNodeGetGraph(node, &child), "cudaGraphChildGraphNodeGetGraph");
      check_body_rules(child, construct, index);
    }
  }
}

} // namespace graphcap::detail
