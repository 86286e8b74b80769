// Shared helpers for the double's own tests.
#pragma once

#include <cuda_double/control.hpp>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "catch_shim.hpp"

#define CUDA_OK(expr) REQUIRE((expr) == cudaSuccess)

// Every test starts from a clean double and checks that it leaked nothing
// it did not mean to.
struct Clean {
  Clean() { cuda_double::reset(); }
  ~Clean() { cuda_double::reset(); }
};

inline cudaStream_t make_stream(unsigned flags = cudaStreamNonBlocking) {
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, flags));
  return s;
}

inline cudaEvent_t make_event(unsigned flags = cudaEventDefault) {
  cudaEvent_t e = nullptr;
  CUDA_OK(cudaEventCreateWithFlags(&e, flags));
  return e;
}

inline cudaGraph_t make_graph() {
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaGraphCreate(&g, 0));
  return g;
}

inline void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, bytes));
  return p;
}

inline std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t g) {
  std::size_t n = 0;
  CUDA_OK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n)
    CUDA_OK(cudaGraphGetNodes(g, nodes.data(), &n));
  return nodes;
}

inline std::vector<cudaGraphNode_t> deps_of(cudaGraphNode_t node) {
  std::size_t n = 0;
  CUDA_OK(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n));
  std::vector<cudaGraphNode_t> deps(n);
  if (n)
    CUDA_OK(cudaGraphNodeGetDependencies(node, deps.data(), nullptr, &n));
  return deps;
}

inline cudaGraphNodeType type_of(cudaGraphNode_t node) {
  cudaGraphNodeType t{};
  CUDA_OK(cudaGraphNodeGetType(node, &t));
  return t;
}
