// graphcap/policies/pool/graph_memory_nodes.hpp - pool::graph_memory_nodes: memory allocated
// during a capture is CUDA's own graph memory nodes (cudaMallocAsync inside the capture).
#pragma once

#include <graphcap/detail/allocation_size.hpp>
#include <graphcap/detail/capture_mode_guard.hpp>
#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/detail/hooks.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace graphcap::pool {

/// CUDA's own graph memory nodes: allocate() is cudaMallocAsync on the capture stream, which
/// records a memory-allocation node that the graph owns, and deallocate() a memory-free node.
/// Freed automatically at the next launch (cudaGraphInstantiateFlagAutoFreeOnLaunch). A graph
/// with memory nodes can have only one executable graph at a time. What the capture allocates and
/// does not free is freed on reset() and destruction: CUDA frees it only at a next launch, and
/// destroying a graph frees nothing (cudaFree, which waits for the device: not on the replay path).
struct graph_memory_nodes : detail::no_hooks<detail::pool_category> {
  static constexpr bool can_allocate = true;
  static constexpr bool has_handle = false;
  static constexpr unsigned long long instantiate_flags = cudaGraphInstantiateFlagAutoFreeOnLaunch;
  /// Allocations are graph nodes (which a conditional body may not hold).
  static constexpr bool allocates_graph_nodes = true;

  graph_memory_nodes() noexcept = default;
  graph_memory_nodes(graph_memory_nodes&& other) noexcept
      : unfreed_(std::move(other.unfreed_)), launched_(std::exchange(other.launched_, false)) {}
  graph_memory_nodes& operator=(graph_memory_nodes&& other) noexcept {
    if (this != &other) {
      on_reset();
      unfreed_ = std::move(other.unfreed_);
      launched_ = std::exchange(other.launched_, false);
    }
    return *this;
  }
  graph_memory_nodes(const graph_memory_nodes&) = delete;
  graph_memory_nodes& operator=(const graph_memory_nodes&) = delete;
  ~graph_memory_nodes() { on_reset(); }

  template <class T>
  [[nodiscard]] T* allocate(std::size_t count, cudaStream_t stream) {
    const std::size_t bytes = detail::allocation_bytes<T>(count);
    unfreed_.reserve(unfreed_.size() + 1); // so that the push_back below cannot throw
    void* block = nullptr;
    detail::check(cudaMallocAsync(&block, bytes, stream), "cudaMallocAsync");
    unfreed_.push_back(block);
    return static_cast<T*>(block);
  }
  void deallocate(const void* block, cudaStream_t stream) {
    detail::check(cudaFreeAsync(const_cast<void*>(block), stream), "cudaFreeAsync");
    std::erase(unfreed_, block);
  }

  /// One store: whether an allocation can exist (memory nodes allocate when the graph runs).
  void before_replay(cudaStream_t /*stream*/) noexcept { launched_ = true; }
  /// A capture that failed was never launched: nothing was allocated.
  void on_capture_abort() noexcept { unfreed_.clear(); }

  void on_reset() noexcept {
    if (launched_) {
      const detail::relaxed_capture_mode_guard relaxed;
      for (void* block : unfreed_) {
        detail::ignore(cudaFree(block)); // waits for the last replay
      }
      static_cast<void>(cudaGetLastError());
    }
    unfreed_.clear();
    launched_ = false;
  }

private:
  std::vector<void*> unfreed_; // allocated during the capture and not freed by it
  bool launched_ = false;
};

} // namespace graphcap::pool
