// graphcap/control_flow/detail/conditional_rules.hpp - the errors of a body
// that failed, and CUDA's rule for what a body may hold (node types, host memory of copies). How a
// body's capture ends: body_capture_end.hpp.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/core/detail/capture.hpp>
#include <graphcap/cuda/detail/capture_point.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>
#include <graphcap/cuda/node_type.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace graphcap::detail::control_flow {

using detail::capture_point;    // cuda/detail/capture_point.hpp
using detail::capture_point_of; // likewise
using detail::check_in_capture; // likewise

/// "body 0 of while_()" for messages.
template <class = void>
std::string describe_body(const char* construct, unsigned index) {
  return "body " + std::to_string(index) + " of " + construct + "()";
}

/// Throws the capture_error for a body that returned with work forked from it left unjoined.
template <class = void>
GRAPHCAP_COLD [[noreturn]] void refuse_unjoined_body(const char* construct, unsigned index) {
  throw_error<capture_error>(
      cudaErrorStreamCaptureUnjoined, "graphcap: " + describe_body(construct, index),
      "work forked from the body to another stream (cudaEventRecord on body.stream(), "
      "cudaStreamWaitEvent on the other stream) was not joined back before the body returned; "
      "record an event on that stream and make body.stream() wait for it. graphcap joined it "
      "so that CUDA keeps the body graph, and the capture is discarded");
}

/// Throws the capture_error for a body whose capture CUDA invalidated.
template <class = void>
GRAPHCAP_COLD [[noreturn]] void refuse_invalidated_body(const char* construct, unsigned index,
                                                        cudaStream_t stream) {
  throw_error<capture_error>(
      cudaErrorStreamCaptureInvalidated, "graphcap: " + describe_body(construct, index),
      capture::failure_hint(cudaErrorStreamCaptureInvalidated, stream) +
          "; the whole capture is discarded (CUDA destroys a body graph whose capture fails to "
          "end, so graphcap ends the outermost capture instead: docs/reliability.md)");
}

/// Whether CUDA allows a node of `type` in a conditional body.
[[nodiscard]] constexpr bool allowed_in_body(cudaGraphNodeType type) noexcept {
  return kind_of(type).in_body; // cuda/detail/node_kinds.hpp
}

/// "0x7f..." for an address or handle in a message.
template <class = void>
std::string describe_address(const void* address) {
  char digits[2 * sizeof(void*) + 3] = {'0', 'x'};
  const auto end = std::to_chars(digits + 2, digits + sizeof digits,
                                 reinterpret_cast<std::uintptr_t>(address), 16) // NOLINT: printed
                       .ptr;
  return address == nullptr ? std::string{"(none)"} : std::string{digits, end};
}
template <class = void>
std::string describe_graph(cudaGraph_t graph) {
  return describe_address(graph);
}

/// Whether `pointer` is pageable host memory (no CUDA allocation and no registered range holds
/// it), which a memcpy node in a conditional body may not touch.
template <class = void>
[[nodiscard]] bool is_pageable(const void* pointer) {
  if (pointer == nullptr) {
    return false;
  }
  cudaPointerAttributes attributes{};
  check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  return attributes.type == cudaMemoryTypeUnregistered;
}

/// Throws the capture_error for a memcpy node of a body that touches pageable host memory.
template <class = void>
GRAPHCAP_COLD [[noreturn]] void refuse_pageable_copy(const char* construct, unsigned index,
                                                     const void* host, bool source) {
  std::string message = "graphcap: " + describe_body(construct, index) +
                        " holds a memcpy node whose " + (source ? "source" : "destination") +
                        " is pageable host memory (" + describe_address(host) +
                        "), which CUDA does not allow";
  throw_error<capture_error>(
      cudaErrorInvalidValue, message,
      "memcpy nodes in a conditional body may touch device memory and pinned host memory only "
      "(CUDA refuses the graph at instantiation otherwise); copy through a buffer from "
      "cudaMallocHost or cudaHostRegister, or copy to the host after the conditional");
}

/// Checks a memcpy node of a body against CUDA's rule for host memory.
template <class = void>
void check_body_copy(cudaGraphNode_t node, const char* construct, unsigned index) {
  cudaMemcpy3DParms copy{};
  check(cudaGraphMemcpyNodeGetParams(node, &copy), "cudaGraphMemcpyNodeGetParams");
  if (copy.srcArray == nullptr && is_pageable(copy.srcPtr.ptr)) [[unlikely]] {
    refuse_pageable_copy(construct, index, copy.srcPtr.ptr, true);
  }
  if (copy.dstArray == nullptr && is_pageable(copy.dstPtr.ptr)) [[unlikely]] {
    refuse_pageable_copy(construct, index, copy.dstPtr.ptr, false);
  }
}

/// Throws the capture_error for a node a body may not hold.
template <class = void>
GRAPHCAP_COLD [[noreturn]] void refuse_body_node(cudaGraphNodeType type, const char* construct,
                                                 unsigned index) {
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
  if (kind_of(type).graph_memory) {
    hint += "; allocate from a slab pool (pool::private_pool, pool::shared, pool::user) or "
            "before the conditional, not with cudaMallocAsync or pool::graph_memory_nodes";
  } else if (kind_of(type).event) {
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
template <class = void>
void check_body_rules(cudaGraph_t graph, const char* construct, unsigned index) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  for (const cudaGraphNode_t node : nodes) {
    const cudaGraphNodeType type = node_type_of(node);
    if (!allowed_in_body(type)) [[unlikely]] {
      refuse_body_node(type, construct, index);
    }
    if (type == cudaGraphNodeTypeMemcpy) {
      check_body_copy(node, construct, index);
    }
    if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      check(cudaGraphChildGraphNodeGetGraph(node, &child), "cudaGraphChildGraphNodeGetGraph");
      check_body_rules(child, construct, index);
    }
  }
}

} // namespace graphcap::detail::control_flow
