// graphcap/control_flow/detail/body_capture_end.hpp - how a conditional body's capture ends without
// CUDA destroying the body graph under the graph that owns it (the reliability issue; the facts are
// benchmark/probes/body_abandon.cu's, on the H200 with CUDA 13.0 and driver 580).
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <vector>

namespace graphcap::detail::control_flow {

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
template <class = void>
[[nodiscard]] std::atomic<std::size_t>& graphs_kept() noexcept {
  static std::atomic<std::size_t> count{0};
  return count;
}

/// The capture status of `stream`, and what its next captured node depends on; false when CUDA
/// could not say.
template <class = void>
bool capture_status(cudaStream_t stream, cudaStreamCaptureStatus& status, cudaGraph_t* graph,
                    std::vector<cudaGraphNode_t>& waited) noexcept {
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
template <class = void>
void invalidate_capture(cudaStream_t parent) noexcept {
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
template <class = void>
bool join_forked_work(cudaStream_t stream, cudaGraph_t graph,
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
template <class = void>
bool end_joined(cudaStream_t stream, cudaGraph_t graph, const std::vector<cudaGraphNode_t>& waited,
                bool& joined, cudaGraph_t& ended) noexcept {
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
template <class = void>
void end_root_and_keep(cudaStream_t root) noexcept {
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
template <class = void>
body_capture_end end_body_capture(cudaStream_t stream, cudaGraph_t graph, cudaStream_t parent,
                                  cudaStream_t root) noexcept {
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

} // namespace graphcap::detail::control_flow
