// graphcap/pool/graph_memory_nodes.hpp - pool::graph_memory_nodes: memory allocated
// during a capture is CUDA's own graph memory nodes (cudaMallocAsync inside the capture).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/detail/allocation_size.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/detail/held_blocks.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace graphcap::pool {

/// CUDA's own graph memory nodes: allocate() is cudaMallocAsync on the capture stream, which
/// records a memory-allocation node that the graph owns, and deallocate() a memory-free node.
/// Freed automatically at the next launch (cudaGraphInstantiateFlagAutoFreeOnLaunch). A graph
/// with memory nodes can have only one executable graph at a time. What the capture allocates and
/// does not free is freed on reset() and destruction: CUDA frees it only at a next launch, and
/// destroying a graph frees nothing. There graphcap waits for the device, then calls cudaFree: a
/// graph allocation's lifetime ends at its cudaFree, which returns at once while a replay that
/// uses it still runs (probe benchmark/probes/graph_memory_free.cu), so the wait is graphcap's
/// (a device-wide one, as private_pool's reset; not on the replay path).
template <class = void>
struct basic_graph_memory_nodes : policy_base<policy_kind::pool> {
  /// scope::allocate() exists (make_buffer() does not: CUDA owns the memory).
  static constexpr bool can_allocate = true;
  /// No pool to share.
  static constexpr bool has_handle = false;
  /// What the capture allocates and does not free is freed at the next launch.
  static constexpr unsigned long long instantiate_flags = cudaGraphInstantiateFlagAutoFreeOnLaunch;
  /// Allocations are graph nodes (which a conditional body may not hold).
  static constexpr bool allocates_graph_nodes = true;

  /// Nothing allocated.
  basic_graph_memory_nodes() noexcept = default;
  /// Takes over the other policy's allocations.
  basic_graph_memory_nodes(basic_graph_memory_nodes&& other) noexcept
      : allocated_(std::move(other.allocated_)), launched_(std::exchange(other.launched_, false)) {}
  /// Frees its own allocations (on_reset), then takes over the other policy's.
  basic_graph_memory_nodes& operator=(basic_graph_memory_nodes&& other) noexcept {
    if (this != &other) {
      on_reset();
      allocated_ = std::move(other.allocated_);
      launched_ = std::exchange(other.launched_, false);
    }
    return *this;
  }
  basic_graph_memory_nodes(const basic_graph_memory_nodes&) = delete;
  basic_graph_memory_nodes& operator=(const basic_graph_memory_nodes&) = delete;
  /// Frees what a launched capture left allocated (on_reset).
  ~basic_graph_memory_nodes() { on_reset(); }

  /// `count` objects of T: a memory-allocation node on `stream` (cudaMallocAsync in the capture).
  template <class T>
  [[nodiscard]] T* allocate(std::size_t count, cudaStream_t stream) {
    const std::size_t bytes = detail::allocation_bytes<T>(count);
    allocated_.reserve_one(); // so that add() below cannot throw once the node exists
    void* block = nullptr;
    detail::check(cudaMallocAsync(&block, bytes, stream), "cudaMallocAsync");
    // CUDA may give a block freed earlier in this capture the same address again.
    if (const std::size_t again = allocated_.find(block);
        again != detail::pool::held_blocks::npos) {
      allocated_[again].freed = false;
    } else {
      allocated_.add(block, bytes);
    }
    return static_cast<T*>(block);
  }
  /// A memory-free node on `stream` (cudaFreeAsync in the capture) for `block`.
  void deallocate(const void* block, cudaStream_t stream) {
    detail::check(cudaFreeAsync(const_cast<void*>(block), stream), "cudaFreeAsync");
    if (const std::size_t held = allocated_.find(block); held != detail::pool::held_blocks::npos) {
      allocated_[held].freed = true;
    }
  }

  /// One store: whether an allocation can exist (memory nodes allocate when the graph runs).
  void before_replay(cudaStream_t /*stream*/) noexcept { launched_ = true; }
  /// A capture that failed was never launched: nothing was allocated.
  void on_capture_abort() noexcept { allocated_.release(); }

  /// Frees what the capture allocated and did not free, if the graph was launched.
  void on_reset() noexcept {
    if (launched_ && has_unfreed()) {
      const detail::relaxed_capture_mode_guard relaxed;
      wait_for_the_last_replay();
      for (const detail::pool::held_block& block : allocated_) {
        if (!block.freed) {
          detail::ignore(cudaFree(block.address));
        }
      }
      static_cast<void>(cudaGetLastError());
    }
    allocated_.release();
    launched_ = false;
  }

private:
  /// The last replay may still use the memory, and a graph allocation's cudaFree would not wait
  /// for it. An ordinary cudaFree does wait for the device (probe graph_memory_free, case 4). In
  /// relaxed mode it is taken to leave another stream's capture alone, as the slab pools' cudaFree
  /// is (the double models it so; on the H200 only cudaMalloc was probed that way), where
  /// cudaDeviceSynchronize would invalidate that capture.
  static void wait_for_the_last_replay() noexcept {
    void* sentinel = nullptr;
    if (cudaMalloc(&sentinel, 1) == cudaSuccess) {
      detail::ignore(cudaFree(sentinel));
    }
  }

  [[nodiscard]] bool has_unfreed() const noexcept {
    for (const detail::pool::held_block& block : allocated_) {
      if (!block.freed) {
        return true;
      }
    }
    return false;
  }

  detail::pool::held_blocks
      allocated_; // allocated during the capture; `freed` if the capture freed it
  bool launched_ = false;
};
/// What to name: basic_graph_memory_nodes<> (a template only so that its bodies compile where
/// used).
using graph_memory_nodes = basic_graph_memory_nodes<>;

// The optional hook it offers (core/policy.hpp): CUDA memory nodes, so no conditional body.
static_assert(pool_strategy<graph_memory_nodes> && pool_with_memory_nodes<graph_memory_nodes>);

} // namespace graphcap::pool
