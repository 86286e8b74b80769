// graphcap/detail/pool_core.hpp - the memory behind the allocating pool policies.
//
// A pool_core owns slabs of device memory and hands out blocks of them. Blocks have size
// classes (multiples of 512 bytes up to 1 MiB; larger requests get a slab of their own, rounded
// to 2 MiB), so that a block freed by one capture fits exactly the same request of a later one.
//
// Why slabs, and why this way:
//  - an allocation during a capture must not break the capture: a pool hit makes no CUDA call,
//    and growing takes a slab with cudaMallocAsync on the core's own (never capturing) stream,
//    under the relaxed capture-mode guard, synchronized on that stream;
//  - slabs go back with cudaFreeAsync on the stream of the last replay that used them, so they
//    are released after that replay has finished, with no synchronizing call;
//  - memory comes from the device's current memory pool, or from a user's cudaMemPool_t.
//
// A core is shared (std::shared_ptr) by every graph of a shared pool and by every pool_handle.
// It is not internally synchronized: graphs sharing a pool must not capture concurrently.
#pragma once

#include <graphcap/detail/capture_mode_guard.hpp>
#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/detail/unique_handle.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace graphcap {

/// What a pool holds, for introspection and tests.
struct pool_statistics {
  std::size_t reserved_bytes = 0; ///< device memory held in slabs
  std::size_t in_use_bytes = 0;   ///< bytes of blocks handed out and not given back
  std::size_t slabs = 0;          ///< slabs held
  std::size_t blocks_in_use = 0;  ///< blocks handed out and not given back
};

namespace detail {

class pool_core {
public:
  static constexpr std::size_t small_granule = 512;
  static constexpr std::size_t small_limit = std::size_t{1} << 20; // 1 MiB
  static constexpr std::size_t slab_size = std::size_t{2} << 20;   // 2 MiB

  /// The size class of a request: what a block for `bytes` really occupies.
  static constexpr std::size_t size_class(std::size_t bytes) noexcept {
    const std::size_t granule = bytes <= small_limit ? small_granule : slab_size;
    const std::size_t rounded = (bytes + granule - 1) / granule * granule;
    return rounded == 0 ? granule : rounded;
  }

  /// A core drawing slabs from `source` (nullptr: the current device's current memory pool).
  explicit pool_core(cudaMemPool_t source = nullptr) noexcept : source_(source) {}
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;
  pool_core(pool_core&&) = delete;
  pool_core& operator=(pool_core&&) = delete;
  ~pool_core() { release_slabs(); }

  /// A block of size_class(bytes) bytes: a free block of that class if there is one (no CUDA
  /// call), else carved from the current small slab, else a new slab.
  [[nodiscard]] void* take(std::size_t bytes) {
    const std::size_t size = size_class(bytes);
    if (auto free = free_blocks_.find(size); free != free_blocks_.end()) {
      void* block = free->second;
      free_blocks_.erase(free);
      note_taken(size);
      return block;
    }
    void* block = nullptr;
    if (size <= small_limit) {
      if (bump_left_ < size) {
        bump_next_ = static_cast<std::byte*>(new_slab(slab_size, bytes));
        bump_left_ = slab_size;
      }
      block = bump_next_;
      bump_next_ += size;
      bump_left_ -= size;
    } else {
      block = new_slab(size, bytes);
    }
    note_taken(size);
    return block;
  }

  /// Gives a block back for later takes of its size class.
  void give_back(void* block, std::size_t bytes) {
    const std::size_t size = size_class(bytes);
    free_blocks_.emplace(size, block);
    stats_.in_use_bytes -= size;
    --stats_.blocks_in_use;
  }

  /// Frees every slab, ordered after the last replay (see last_replay_stream). Blocks still
  /// handed out become invalid: call only when no graph uses the core any more.
  void release_slabs() noexcept {
    if (slabs_.empty()) {
      return;
    }
    const relaxed_capture_mode_guard relaxed;
    for (const auto& slab : slabs_) {
      free_slab(slab.first);
    }
    slabs_.clear();
    free_blocks_.clear();
    bump_next_ = nullptr;
    bump_left_ = 0;
    stats_ = {};
  }

  /// Remembered by every replay of a graph using this core, so that slabs are freed after it.
  void set_last_replay_stream(cudaStream_t stream) noexcept {
    last_replay_stream_ = stream;
    replayed_ = true;
  }

  /// Calls f(base, bytes) for each slab.
  template <class F>
  void for_each_slab(F&& f) const {
    for (const auto& slab : slabs_) {
      f(static_cast<const void*>(slab.first), slab.second);
    }
  }

  [[nodiscard]] const pool_statistics& statistics() const noexcept { return stats_; }
  [[nodiscard]] cudaMemPool_t source() const noexcept { return source_; }

private:
  void note_taken(std::size_t size) noexcept {
    stats_.in_use_bytes += size;
    ++stats_.blocks_in_use;
  }

  void* new_slab(std::size_t size, std::size_t requested) {
    const relaxed_capture_mode_guard relaxed; // a global capture may be running on this thread
    if (!stream_) {
      cudaStream_t stream = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      stream_.reset(stream);
    }
    void* slab = nullptr;
    cudaError_t status = source_ != nullptr
                             ? cudaMallocFromPoolAsync(&slab, size, source_, stream_.get())
                             : cudaMallocAsync(&slab, size, stream_.get());
    if (status == cudaSuccess) {
      status = cudaStreamSynchronize(stream_.get());
    }
    if (status != cudaSuccess) {
      if (slab != nullptr) {
        ignore(cudaFreeAsync(slab, stream_.get()));
      }
      fail_to_grow(status, size, requested);
    }
    slabs_.emplace_back(slab, size);
    stats_.reserved_bytes += size;
    ++stats_.slabs;
    return slab;
  }

  GRAPHCAP_COLD [[noreturn]] void fail_to_grow(cudaError_t status, std::size_t size,
                                               std::size_t requested) const {
    throw_cuda<out_of_memory_error>(
        status, source_ != nullptr ? "cudaMallocFromPoolAsync" : "cudaMallocAsync",
        "the graph's pool could not grow by " + std::to_string(size) + " bytes for a request of " +
            std::to_string(requested) + " bytes (the pool holds " +
            std::to_string(stats_.reserved_bytes) + " bytes in " + std::to_string(stats_.slabs) +
            " slabs); free memory, or allocate less during the capture");
  }

  void free_slab(void* slab) noexcept {
    // After the last replay on its stream; if that stream is gone, on our own stream after
    // waiting for the device to be done with the slab (cudaFree waits).
    cudaStream_t stream = replayed_ ? last_replay_stream_ : stream_.get();
    if (cudaFreeAsync(slab, stream) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      ignore(cudaFree(slab));
    }
  }

  cudaMemPool_t source_ = nullptr;
  stream_handle stream_;                             // never captures: slabs are taken on it
  std::vector<std::pair<void*, std::size_t>> slabs_; // (address, bytes)
  std::multimap<std::size_t, void*> free_blocks_;    // size class -> free block
  std::byte* bump_next_ = nullptr;                   // the current small slab's next free byte
  std::size_t bump_left_ = 0;
  cudaStream_t last_replay_stream_ = nullptr;
  bool replayed_ = false;
  pool_statistics stats_{};
};

} // namespace detail
} // namespace graphcap
