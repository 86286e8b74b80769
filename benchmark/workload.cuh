// benchmark/workload.cuh - the work the benchmark cases capture, and the hand-written raw-CUDA
// arm they compare graphcap with. Each case is its own executable; these kernels are defined in
// an unnamed namespace, one copy per case.
#pragma once

#include "harness.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace bench {
namespace {

/// The tiniest kernel that still does something: one warp, one store. What a latency-bound
/// loop's launch overhead is measured with.
__global__ void tiny(int* sink) {
  if (threadIdx.x == 0 && sink != nullptr) {
    *sink += 1;
  }
}

/// `kernels` tiny kernels in a row on `stream` (a straight-line graph when captured).
inline void issue_tiny(cudaStream_t stream, int kernels, int* sink) {
  for (int k = 0; k < kernels; ++k) {
    tiny<<<1, 32, 0, stream>>>(sink);
  }
}

/// A small elementwise kernel (x += value over n floats): the realistic step's building block,
/// the same work as PyTorch's `x.add_(value)` on a float tensor of n elements.
__global__ void add_scalar(float* x, float value, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    x[i] += value;
  }
}

/// Reads the GPU's nanosecond clock.
__device__ inline std::uint64_t global_nanoseconds() {
  std::uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/// Up to 64 pointers passed by value: each is a kernel-parameter word liveness::check finds
/// (bench_features' and bench_liveness' inputs).
struct pointer_table {
  float* pointers[64];
  int count;
};

/// Reads and writes the first element of each pointer of `table`.
__global__ void touch_all(pointer_table table) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < table.count; ++i) {
      table.pointers[i][0] += 1.0F;
    }
  }
}

/// Holds the stream until the host sets *open (mapped pinned memory), or `timeout_ns` passed; in
/// the second case it counts a timeout, which makes the measurement behind it suspect.
__global__ void gate_kernel(const volatile int* open, volatile int* timeouts,
                            std::uint64_t timeout_ns) {
  const std::uint64_t start = global_nanoseconds();
  while (*open == 0) {
    if (global_nanoseconds() - start > timeout_ns) {
      *timeouts = *timeouts + 1; // one thread, one gate at a time: no atomic needed
      return;
    }
  }
}

/// A gate in front of timed stream work: the host queues the work behind a spinning kernel, then
/// opens the gate, so the device runs the queued work back to back and its events measure device
/// time, not the host's launch rate.
class gate {
public:
  gate() {
    check(cudaHostAlloc(reinterpret_cast<void**>(&open_), sizeof(int), cudaHostAllocMapped),
          "cudaHostAlloc");
    check(cudaHostAlloc(reinterpret_cast<void**>(&timeouts_), sizeof(int), cudaHostAllocMapped),
          "cudaHostAlloc");
    *open_ = 0;
    *timeouts_ = 0;
  }
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;
  gate(gate&&) = delete;
  gate& operator=(gate&&) = delete;
  ~gate() {
    cudaFreeHost(open_);
    cudaFreeHost(timeouts_);
  }

  void close(cudaStream_t stream, std::uint64_t timeout_ns = 200'000'000) {
    *static_cast<volatile int*>(open_) = 0;
    gate_kernel<<<1, 1, 0, stream>>>(open_, timeouts_, timeout_ns);
    check(cudaGetLastError(), "gate kernel launch");
  }
  void open() { *static_cast<volatile int*>(open_) = 1; }
  [[nodiscard]] int timeouts() const { return *static_cast<volatile int*>(timeouts_); }

private:
  int* open_ = nullptr;
  int* timeouts_ = nullptr;
};

/// The hand-written arm: what a careful program writes without graphcap. Capture on a
/// non-blocking stream, instantiate, destroy the template (unless kept), launch with a check.
class raw_graph {
public:
  template <class Work>
  raw_graph(cudaStream_t capture_stream, Work&& work, bool keep_template = false) {
    check(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal),
          "cudaStreamBeginCapture");
    work(capture_stream);
    check(cudaStreamEndCapture(capture_stream, &graph_), "cudaStreamEndCapture");
    check(cudaGraphInstantiateWithFlags(&exec_, graph_, 0), "cudaGraphInstantiateWithFlags");
    if (!keep_template) {
      check(cudaGraphDestroy(graph_), "cudaGraphDestroy");
      graph_ = nullptr;
    }
  }
  raw_graph(const raw_graph&) = delete;
  raw_graph& operator=(const raw_graph&) = delete;
  raw_graph(raw_graph&&) = delete;
  raw_graph& operator=(raw_graph&&) = delete;
  ~raw_graph() {
    cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) {
      cudaGraphDestroy(graph_);
    }
  }

  void replay(cudaStream_t stream) const {
    check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
  }
  [[nodiscard]] cudaGraphExec_t exec() const { return exec_; }
  [[nodiscard]] cudaGraph_t graph() const { return graph_; }

private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

/// The shape of a graph: node types, kernel functions and edges, with nodes numbered in the
/// order cudaGraphGetNodes lists them (creation order).
struct graph_shape {
  std::vector<cudaGraphNodeType> types;
  std::vector<const void*> functions; // kernel nodes' functions, null for other nodes
  std::vector<std::pair<std::size_t, std::size_t>> edges;
};

inline graph_shape shape_of(cudaGraph_t graph) {
  graph_shape shape;
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
    shape.types.push_back(type);
    const void* function = nullptr;
    if (type == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams params{};
      check(cudaGraphKernelNodeGetParams(node, &params), "cudaGraphKernelNodeGetParams");
      function = params.func;
    }
    shape.functions.push_back(function);
  }
  std::size_t edge_count = 0;
  check(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count), "cudaGraphGetEdges");
  std::vector<cudaGraphNode_t> from(edge_count);
  std::vector<cudaGraphNode_t> to(edge_count);
  check(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &edge_count),
        "cudaGraphGetEdges");
  const auto index = [&](cudaGraphNode_t node) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i] == node) {
        return i;
      }
    }
    return nodes.size();
  };
  for (std::size_t e = 0; e < edge_count; ++e) {
    shape.edges.emplace_back(index(from[e]), index(to[e]));
  }
  std::sort(shape.edges.begin(), shape.edges.end());
  return shape;
}

/// Empty when the two graphs have the same nodes (types, kernels) and edges; else what differs.
inline std::string compare_shapes(cudaGraph_t raw, cudaGraph_t graphcap_graph) {
  const graph_shape a = shape_of(raw);
  const graph_shape b = shape_of(graphcap_graph);
  if (a.types.size() != b.types.size()) {
    return "node count " + std::to_string(a.types.size()) + " (raw) vs " +
           std::to_string(b.types.size()) + " (graphcap)";
  }
  if (a.edges.size() != b.edges.size()) {
    return "edge count " + std::to_string(a.edges.size()) + " (raw) vs " +
           std::to_string(b.edges.size()) + " (graphcap)";
  }
  if (a.types != b.types) {
    return "node types differ";
  }
  if (a.functions != b.functions) {
    return "kernel functions differ";
  }
  if (a.edges != b.edges) {
    return "edges differ";
  }
  return {};
}

} // namespace
} // namespace bench
