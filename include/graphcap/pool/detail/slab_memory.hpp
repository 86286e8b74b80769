// graphcap/pool/detail/slab_memory.hpp - where a pool's slabs come from, and how they go back.
//
// Three sources, and what orders a slab's release after the last replay of the graphs that used
// it (pool/detail/pool_core.hpp keeps the blocks; this keeps the slabs' memory). No graph carries
// a node of the pool's and no replay stream is remembered: the device-wide wait is the order.
//  - a private pool no one else holds: cudaMalloc, and cudaFree, which waits for the device
//    before it frees (measured on the H200; and legal, under the relaxed capture-mode guard,
//    while another thread captures: cudaDeviceSynchronize is not);
//  - otherwise the device's current memory pool (cudaMallocAsync) or the user's cudaMemPool_t
//    (cudaMallocFromPoolAsync), freed with cudaFreeAsync on the slabs' own stream, after the
//    graph that gave the blocks back waited for the device (wait_for_device, slab_pool);
//  - with GRAPHCAP_NVTX_REGIONS, cudaMalloc for memory checkers, freed with cudaFree;
//  - a slab_source of the policy's own (pool::sleepable's VMM chunks), freed after that wait
//    and once the own stream is done.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/executable_cache.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/detail/nvtx_regions.hpp>
#include <graphcap/pool/pool_statistics.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>

namespace graphcap::detail::pool {

/// Slabs from somewhere else than the runtime's allocators (pool::sleepable's VMM chunks): what
/// slab_memory asks of it. Growth only: a block taken from a free list never reaches it.
template <class = void>
class basic_slab_source {
public:
  basic_slab_source() = default;
  basic_slab_source(const basic_slab_source&) = delete;
  basic_slab_source& operator=(const basic_slab_source&) = delete;
  basic_slab_source(basic_slab_source&&) = delete;
  basic_slab_source& operator=(basic_slab_source&&) = delete;
  virtual ~basic_slab_source() = default;
  /// `size` bytes at `*slab`, or the status of the call that failed (allocating_call() names it
  /// then): a driver call's, which leaves the runtime's last error alone, so the pool reports it
  /// with throw_error; may throw a graphcap::error of its own (a missing driver function, a
  /// state).
  [[nodiscard]] virtual cudaError_t allocate(void** slab, std::size_t size) = 0;
  /// Gives a slab back, once nothing on the device uses it any more.
  virtual void free(void* slab) noexcept = 0;
  /// The call that failed last in allocate(), for error messages.
  [[nodiscard]] virtual const char* allocating_call() const noexcept = 0;
  /// True while the memory is away (a sleeping pool::sleepable pool, from sleep() until a wake()
  /// succeeds): the slabs' addresses are unmapped, and no block of them may be handed out.
  [[nodiscard]] bool asleep() const noexcept { return asleep_; }

protected:
  bool asleep_ = false; // set by the source's sleep and wake
};
using slab_source = basic_slab_source<>;

/// A slab of `bytes` gone from `stats`: its reserve, and its share of the device bytes measured
/// at growth (what an allocator reserved beyond the slabs goes back with the last one; the
/// pool's stream, `stream_bytes`, stays while the pool lives).
inline void count_slab_freed(pool_statistics& stats, std::size_t bytes,
                             std::size_t stream_bytes) noexcept {
  stats.reserved_bytes -= bytes;
  --stats.slabs;
  const std::size_t slabs =
      stats.device_bytes > stream_bytes ? stats.device_bytes - stream_bytes : 0;
  stats.device_bytes = stream_bytes + (stats.slabs == 0 ? 0 : slabs - std::min(slabs, bytes));
}

/// How slabs go back, which decides what must order them after the last replay.
enum class slab_release : unsigned char {
  /// cudaFreeAsync on the slabs' stream, after the giving graph's wait for the device.
  after_wait,
  /// cudaFree of cudaMalloc'ed slabs, which waits for the device by itself.
  waits_for_device,
};

/// The memory of a pool's slabs: taken and freed as the top of this file says.
template <class = void>
class basic_slab_memory {
public:
  /// Slabs from `source` (nullptr: the current device's current memory pool), released `how`
  /// (a user's pool is always after_wait: its frees do not wait).
  explicit basic_slab_memory(cudaMemPool_t source, slab_release how) noexcept
      : source_(source), waits_(how == slab_release::waits_for_device && source == nullptr) {}
  /// Slabs from `custom`, freed after the giving graph's wait.
  explicit basic_slab_memory(std::shared_ptr<slab_source> custom) noexcept
      : custom_(std::move(custom)) {}

  /// The policy's own source (null: the runtime's allocators).
  [[nodiscard]] const std::shared_ptr<slab_source>& custom() const noexcept { return custom_; }

  /// The user's memory pool (nullptr: the device's current pool).
  [[nodiscard]] cudaMemPool_t source() const noexcept { return source_; }
  /// True when freeing a slab waits for the device (slab_release::waits_for_device).
  [[nodiscard]] bool frees_wait_for_device() const noexcept { return waits_; }
  /// True where slabs are registered for memory checkers (GRAPHCAP_NVTX_REGIONS): a
  /// compile-time false otherwise.
  [[nodiscard]] bool registers_slabs() const noexcept {
    return nvtx_regions::enabled && source_ == nullptr && !custom_;
  }
  /// What the slabs' stream took of the device when made (counted with the first slab's).
  [[nodiscard]] std::size_t stream_bytes() const noexcept { return stream_bytes_; }
  /// The call that takes a slab, for error messages.
  [[nodiscard]] const char* allocating_call() const noexcept {
    return custom_              ? custom_->allocating_call()
           : source_ != nullptr ? "cudaMallocFromPoolAsync"
           : malloced()         ? "cudaMalloc"
                                : "cudaMallocAsync";
  }

  /// state_error while the slabs' memory is asleep (slab_source::asleep): every way to a block,
  /// a free-list hit too, and every capture into the pool, is refused then.
  void require_awake() const {
    if (custom_ && custom_->asleep()) [[unlikely]] {
      throw_asleep();
    }
  }

  /// `size` bytes, or the failed call's status (the stream or synchronize failing throws).
  /// `device_taken`: what the device's free memory dropped by meanwhile (free_figure), `size`
  /// for a source of the policy's own (its VMM chunks take exactly their size).
  [[nodiscard]] cudaError_t allocate(void** slab, std::size_t size, std::size_t& device_taken) {
    const relaxed_capture_mode_guard relaxed; // a global capture may be running on this thread
    // A stream takes device memory too, 2 MiB at a time from the driver (64 streams took 26 MiB on
    // an H200: benchmark/probes/budget_drop.cu); a stream-ordered pool reserves more than a slab
    // (32 MiB for a 2 MiB slab: benchmark/probes/first_use_memory.cu). Both are measured.
    std::size_t stream_bytes = 0;
    if (!stream_) {
      const free_figure before_stream;
      cudaStream_t stream = nullptr;
      ignore(cudaGetDevice(&device_)); // for wait_for_device(); a failure fails the next call
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      stream_.reset(stream);
      stream_bytes = before_stream.taken_since(0);
      stream_bytes_ = stream_bytes;
    }
    device_taken = size + stream_bytes;
    if (custom_) {
      return custom_->allocate(slab, size);
    }
    const free_figure before;
    const cudaError_t status = source_ != nullptr
                                   ? cudaMallocFromPoolAsync(slab, size, source_, stream_.get())
                               : malloced() ? cudaMalloc(slab, size)
                                            : cudaMallocAsync(slab, size, stream_.get());
    if (status != cudaSuccess) {
      return status;
    }
    // A failed synchronize is no shortage of memory (most likely an earlier kernel's error):
    // report it as what it is.
    if (!malloced()) {
      if (const cudaError_t synced = cudaStreamSynchronize(stream_.get()); synced != cudaSuccess) {
        ignore(cudaFreeAsync(*slab, stream_.get()));
        throw_cuda(synced, "cudaStreamSynchronize");
      }
    }
    device_taken = before.taken_since(size) + stream_bytes;
    return cudaSuccess;
  }

  /// Frees a slab after the last replay of the graphs that used it (see the top of this file).
  void free(void* slab) const noexcept {
    const relaxed_capture_mode_guard relaxed;
    if (custom_) { // once our stream is done (the graphs waited for the device)
      if (stream_) {
        ignore(cudaStreamSynchronize(stream_.get()));
      }
      custom_->free(slab);
      return;
    }
    if (waits_) { // cudaFree waits for the device itself
      ignore(cudaFree(slab));
      return;
    }
    if (registers_slabs()) { // cudaMalloc'ed: free once our stream is done
      ignore(cudaStreamSynchronize(stream_.get()));
      ignore(cudaFree(slab));
      return;
    }
    // On our own stream (the graphs' replays were waited for when they gave their blocks back);
    // if that fails, cudaFree, which waits for the device.
    if (cudaFreeAsync(slab, stream_.get()) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      ignore(cudaFree(slab));
    }
  }

  /// What the allocator the slabs come from holds free beyond its allocations now, which its
  /// next slabs take before it reserves more: a stream-ordered memory pool's reserved minus used
  /// bytes (the device's current pool, or the user's); 0 for cudaMalloc'ed slabs, a source of
  /// the policy's own (each slab its exact size), and where a reading fails.
  [[nodiscard]] std::size_t allocator_room() const noexcept {
    if (custom_ || malloced()) {
      return 0;
    }
    cudaMemPool_t pool = source_;
    int device = device_;
    if (!stream_ && cudaGetDevice(&device) != cudaSuccess) { // no slab yet: the current device
      static_cast<void>(cudaGetLastError());
      return 0;
    }
    unsigned long long reserved = 0;
    unsigned long long used = 0;
    if ((pool == nullptr && cudaDeviceGetMemPool(&pool, device) != cudaSuccess) ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) !=
            cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return 0;
    }
    return reserved > used ? static_cast<std::size_t>(reserved - used) : 0;
  }

  /// Waits for the frees on the slabs' own stream: a stream-ordered pool gives back the reserve
  /// it holds beyond its release threshold at a synchronize.
  void settle() const noexcept {
    if (stream_ && !custom_ && !malloced()) {
      const relaxed_capture_mode_guard relaxed;
      ignore(cudaStreamSynchronize(stream_.get()));
    }
  }

  /// Waits until the slabs' device has finished its work, as a slab's cudaFree would (a probe
  /// slab allocated and freed; legal while another thread captures): what a graph does before
  /// its blocks change hands or its slabs go by a free that does not wait, and what sleep does.
  /// With no memory for the probe, cudaDeviceSynchronize (which fails while another thread
  /// captures in global mode: then a device in error or a capture elsewhere, nothing better).
  void wait_for_device(std::size_t probe_bytes) const noexcept {
    if (!stream_) { // no slab was ever taken: nothing to order
      return;
    }
    const relaxed_capture_mode_guard relaxed; // another thread may be capturing (global mode)
    int current = device_;
    ignore(cudaGetDevice(&current));
    if (current != device_) {
      ignore(cudaSetDevice(device_));
    }
    void* probe = nullptr;
    if (cudaMalloc(&probe, probe_bytes) == cudaSuccess) {
      if (cudaFree(probe) != cudaSuccess) {    // waits for the device; once more if it failed
        static_cast<void>(cudaGetLastError()); // (neither the wait nor the free may be skipped)
        ignore(cudaFree(probe));
      }
    } else {
      static_cast<void>(cudaGetLastError());
      ignore(cudaDeviceSynchronize()); // no memory for the probe: a full device waits so
    }
    if (current != device_) {
      ignore(cudaSetDevice(current));
    }
  }

private:
  [[nodiscard]] bool malloced() const noexcept { return waits_ || registers_slabs(); }
  GRAPHCAP_COLD [[noreturn]] static void throw_asleep() {
    throw state_error("graphcap: cannot capture into or allocate from a sleepable pool while it "
                      "is asleep (its memory is unmapped): call wake() on its "
                      "sleepable_pool_handle first");
  }

  std::shared_ptr<slab_source> custom_; // the policy's own source, if any
  cudaMemPool_t source_ = nullptr;
  bool waits_ = false;           // slab_release::waits_for_device
  stream_handle stream_;         // never captures: slabs are taken on it
  int device_ = 0;               // the device of stream_ and of every slab
  std::size_t stream_bytes_ = 0; // cudaMemGetInfo's drop at stream_'s creation
};
using slab_memory = basic_slab_memory<>;

} // namespace graphcap::detail::pool
