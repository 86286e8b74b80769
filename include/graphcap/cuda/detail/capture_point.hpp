// graphcap/cuda/detail/capture_point.hpp - where a capture in progress stands, asked of CUDA in
// one place: the capture's id, the graph it captures into (a conditional body's graph for a body
// stream) and what its next node depends on (cudaStreamGetCaptureInfo). Code that adds nodes to a
// capture by hand (conditional nodes, child graphs, tags) reads it here, and reports a failed
// call inside a capture with check_in_capture.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace graphcap::detail {

/// Where a capture stands: the graph it captures into and what the next node depends on.
struct capture_point {
  unsigned long long capture = 0; ///< the capture sequence's id (unique in the process)
  cudaGraph_t graph = nullptr;    ///< the graph the stream captures into
  const cudaGraphNode_t* dependencies = nullptr; ///< CUDA's array, valid until the next call
  const cudaGraphEdgeData* edges = nullptr;      ///< likewise (null: default edges)
  std::size_t count = 0;                         ///< entries of dependencies and edges
};

/// Throws capture_error for a CUDA call that failed inside a capture (the capture is then
/// discarded by the scopes as the exception leaves them).
inline void check_in_capture(cudaError_t status, std::string_view call) {
  if (status != cudaSuccess) [[unlikely]] {
    throw_cuda<capture_error>(status, call);
  }
}

/// The capture point of `stream` if it is actively capturing; nothing otherwise, or where CUDA
/// cannot say (the error is cleared). For callers that must not throw.
inline std::optional<capture_point> active_capture_point(cudaStream_t stream) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  capture_point point;
  if (cudaStreamGetCaptureInfo(stream, &status, &point.capture, &point.graph, &point.dependencies,
                               &point.edges, &point.count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return std::nullopt;
  }
  if (status != cudaStreamCaptureStatusActive || point.graph == nullptr) {
    return std::nullopt;
  }
  return point;
}

/// The capture point of `stream`, for `construct` ("if_", "embed()", ...): capture_error if CUDA
/// refuses the query, or if the stream is not capturing (the scope has ended) or its capture
/// was invalidated (each said so).
inline capture_point capture_point_of(cudaStream_t stream, std::string_view construct) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  capture_point point;
  check_in_capture(cudaStreamGetCaptureInfo(stream, &status, &point.capture, &point.graph,
                                            &point.dependencies, &point.edges, &point.count),
                   "cudaStreamGetCaptureInfo");
  if (status != cudaStreamCaptureStatusActive) [[unlikely]] {
    const bool invalidated = status == cudaStreamCaptureStatusInvalidated;
    throw_error<capture_error>(
        invalidated ? cudaErrorStreamCaptureInvalidated : cudaErrorIllegalState,
        std::string{"graphcap::"}.append(construct),
        invalidated ? "the capture was invalidated before this call"
                    : "the scope's stream is not capturing (has the scope ended?)");
  }
  return point;
}

} // namespace graphcap::detail
