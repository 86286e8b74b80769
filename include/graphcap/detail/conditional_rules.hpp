// graphcap/detail/conditional_rules.hpp - what control_flow.hpp asks of a capture in progress
// (where the capture stands: its graph and current dependencies), how a body's capture is
// abandoned without destroying the body graph, and CUDA's rule for what a body may hold.
#pragma once

#include <graphcap/annotations/node_type.hpp>
#include <graphcap/config.hpp>
#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

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

/// Ends a body's capture, whatever state it is in, keeping the body graph (its node owns it).
inline void abandon_into_existing_graph(cudaStream_t stream) noexcept {
  for (int attempt = 0; attempt < 3; ++attempt) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
        status == cudaStreamCaptureStatusNone) {
      break;
    }
    cudaGraph_t ended = nullptr;
    ignore(cudaStreamEndCapture(stream, &ended)); // the body graph: not ours to destroy
  }
  static_cast<void>(cudaGetLastError());
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
