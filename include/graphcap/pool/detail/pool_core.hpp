// graphcap/pool/detail/pool_core.hpp - the memory behind the allocating pool policies.
//
// A pool_core owns slabs of device memory and hands out blocks of them. Blocks have size
// classes (multiples of 512 bytes up to 1 MiB; larger requests get a slab of their own, rounded
// to 2 MiB), so that a block freed by one capture fits exactly the same request of a later one.
//
// Why slabs, and why this way:
//  - an allocation during a capture must not break the capture: a pool hit makes no CUDA call,
//    and growing takes a slab with cudaMallocAsync on the core's own (never capturing) stream,
//    under the relaxed capture-mode guard, synchronized on that stream;
//  - slabs go back after the last replay of the graphs that used them, with no replay stream to
//    remember (it may be destroyed first) and no node in the graphs: a private pool's slabs with
//    cudaFree, which waits for the device; otherwise with cudaFreeAsync on the core's own
//    stream, after the graph that gave its blocks back waited for the device (slab_pool,
//    wait_for_device; pool/detail/slab_memory.hpp);
//  - a block a graph gives back while others may take it (a shared pool) goes back after that
//    graph waited for the device, at its reset or recapture (never at replay);
//  - a block held by an owning buffer (graphcap::buffer) is pinned: it outlives its graph, and
//    its slab is freed when the last pin goes (as PyTorch frees a released pool's segment).
//
// Cost per block: take() and give_back() are O(1) in the free blocks (a queue per size class,
// pool/detail/free_blocks.hpp), O(log) in the size classes with free blocks and in the slabs (by
// address); pin() and unpin() O(1) on average, looked up only while some buffer is alive.
//
// A core is shared (std::shared_ptr) by the graphs of a shared pool, its pool_handles and its
// buffers, and is not internally synchronized: graphs sharing a pool must not capture at once,
// nor may a buffer be dropped while its pool's graph captures or resets on another thread.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/detail/free_blocks.hpp>
#include <graphcap/pool/detail/nvtx_regions.hpp>
#include <graphcap/pool/detail/slab_memory.hpp>
#include <graphcap/pool/pool_statistics.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphcap {

namespace detail::pool {

/// Slabs of device memory and the blocks carved from them (see the top of this file).
template <class = void>
class basic_pool_core {
public:
  /// The step of the small size classes.
  static constexpr std::size_t small_granule = 512;
  /// The largest small size class (1 MiB): larger requests get a slab of their own.
  static constexpr std::size_t small_limit = std::size_t{1} << 20;
  /// The size of a small slab (2 MiB), and the step of the large size classes.
  static constexpr std::size_t slab_size = std::size_t{2} << 20;

  /// The size class of a request: what a block for `bytes` really occupies.
  static constexpr std::size_t size_class(std::size_t bytes) noexcept {
    const std::size_t granule = bytes <= small_limit ? small_granule : slab_size;
    const std::size_t rounded = (bytes + granule - 1) / granule * granule;
    return rounded == 0 ? granule : rounded;
  }

  /// A core drawing slabs from `source` (nullptr: the current device's current memory pool),
  /// released `how` (pool/detail/slab_memory.hpp).
  explicit basic_pool_core(cudaMemPool_t source = nullptr,
                           slab_release how = slab_release::after_wait) noexcept
      : memory_(source, how) {}
  /// A core whose slabs come from `custom` (pool::sleepable's VMM chunks), freed once the device
  /// is done with them (after the give-back's wait).
  explicit basic_pool_core(std::shared_ptr<slab_source> custom) noexcept
      : memory_(std::move(custom)) {}
  /// Not copyable, not movable: shared through std::shared_ptr.
  basic_pool_core(const basic_pool_core&) = delete;
  basic_pool_core& operator=(const basic_pool_core&) = delete;
  basic_pool_core(basic_pool_core&&) = delete;
  basic_pool_core& operator=(basic_pool_core&&) = delete;
  /// Frees every slab, pinned ones too (their buffers are gone: each holds the core).
  ~basic_pool_core() {
    release_slabs();
    for (const auto& [base, slab] : slabs_) { // slabs pinned by buffers that are gone too
      free_slab(base, slab);
    }
  }

  /// A block of size_class(bytes) bytes: a free block of that class if there is one (no CUDA
  /// call unless the graph that gave it back may still be replaying: then its event is awaited,
  /// once for all the blocks it gave back together), else carved from the current small slab,
  /// else a new slab. O(log) in the size classes that have free blocks, O(1) in the blocks.
  /// Sets `size` to the block's size class (with reuse_larger_blocks(), maybe a larger one).
  /// state_error while the pool's memory sleeps (slab_memory::require_awake): nothing is taken.
  [[nodiscard]] void* take(std::size_t bytes, std::size_t& size) {
    memory_.require_awake();
    size = size_class(bytes);
    // The oldest free block of the class first: a recapture gets its previous blocks in order.
    if (const std::optional<free_block> free = free_.take(size, has_room(size))) {
      size = free->size;
      note_taken(free->address, size, free->heap, free->registered);
      return free->address;
    }
    void* block = nullptr;
    nvtx_regions::heap heap = nullptr;
    if (size <= small_limit) {
      if (bump_left_ < size) {
        std::byte* const fresh = new_slab(slab_size, bytes);
        if (bump_left_ > 0) { // the old slab's end is never carved: no block is there
          slab_of(bump_next_).tail = bump_left_;
        }
        bump_next_ = fresh;
        bump_left_ = slab_size;
        bump_heap_ = slab_of(bump_next_).heap;
      }
      block = bump_next_;
      heap = bump_heap_;
      bump_next_ += size;
      bump_left_ -= size;
    } else {
      block = new_slab(size, bytes);
      heap = slab_of(block).heap;
    }
    note_taken(block, size, heap, false);
    return block;
  }

  /// Gives a block back for later takes of its size class, once `ready` (if any) has passed. A
  /// pinned block stays with its buffer and comes back when the last pin goes. `still_used`: the
  /// giver's graph keeps using the block in its replays (a shared pool's capture-time free), so
  /// memory checkers keep it valid.
  void give_back(void* block, std::size_t bytes, ready_event ready = nullptr,
                 bool still_used = false) {
    if (!pinned_.empty()) { // no buffer alive (the usual case): no lookup per block
      if (auto pinned = pinned_.find(block); pinned != pinned_.end()) {
        pinned->second.returned = true;
        pinned->second.ready = std::move(ready);
        return;
      }
    }
    const std::size_t size = size_class(bytes);
    const nvtx_regions::heap heap = slab_of(block).heap;
    free_.add(size, free_block{block, std::move(ready), heap, still_used});
    note_given_back(block, size, still_used ? nullptr : heap);
  }

  /// Keeps `block` for an owning buffer until unpin(), whatever happens to the graph.
  void pin(void* block, std::size_t bytes) {
    auto [entry, added] = pinned_.try_emplace(
        block, pinned_block{size_class(bytes), 0, false, nullptr, slab_of(block).heap});
    ++entry->second.refs;
    if (added) {
      ++slab_of(block).pins;
    }
  }

  /// Drops a buffer's pin. The block goes back to the pool if its graph gave it back already;
  /// a slab no graph uses any more is freed with its last pin.
  void unpin(void* block) noexcept {
    const auto entry = pinned_.find(block);
    if (entry == pinned_.end() || --entry->second.refs > 0) {
      return;
    }
    const pinned_block pinned = std::move(entry->second);
    pinned_.erase(entry);
    const auto slab = find_slab(block);
    --slab->second.pins;
    if (slab->second.orphaned) {
      note_given_back(block, pinned.bytes, pinned.heap);
      if (slab->second.pins == 0) {
        const relaxed_capture_mode_guard relaxed;
        count_slab_freed(stats_, slab->second.bytes, memory_.stream_bytes());
        free_slab(slab->first, slab->second);
        slabs_.erase(slab);
      }
    } else if (pinned.returned) {
      free_.add(pinned.bytes, free_block{block, pinned.ready, pinned.heap, false});
      note_given_back(block, pinned.bytes, pinned.heap);
    }
  }

  /// Frees every slab that no buffer pins (after the last replay: the graphs waited for the device
  /// when they gave their blocks back, or cudaFree waits); pinned slabs stay until their last pin
  /// goes. Blocks still handed out become invalid: call only when no graph uses the core any more.
  /// `settle`: then waits for the frees, so that a stream-ordered pool trims its reserve.
  void release_slabs(bool settle = false) noexcept {
    const relaxed_capture_mode_guard relaxed;
    for (auto slab = slabs_.begin(); slab != slabs_.end();) {
      if (slab->second.pins == 0) {
        count_slab_freed(stats_, slab->second.bytes, memory_.stream_bytes());
        free_slab(slab->first, slab->second);
        slab = slabs_.erase(slab);
      } else {
        slab->second.orphaned = true; // its other blocks are never handed out again
        ++slab;
      }
    }
    free_.clear();
    bump_next_ = nullptr;
    bump_left_ = 0;
    bump_heap_ = nullptr;
    stats_.in_use_bytes = 0;
    stats_.blocks_in_use = 0;
    for (const auto& [block, pinned] : pinned_) {
      stats_.in_use_bytes += pinned.bytes;
      ++stats_.blocks_in_use;
    }
    if (settle) {
      memory_.settle();
    }
  }

  /// True when freeing a slab waits for the device: a release needs no wait before it.
  [[nodiscard]] bool frees_wait_for_device() const noexcept {
    return memory_.frees_wait_for_device();
  }

  /// Waits until the core's device has finished its work, as a slab's cudaFree would: what a
  /// graph does before its blocks change hands or its slabs go (the handover rule, slab_pool).
  void wait_for_device() const noexcept { memory_.wait_for_device(slab_size); }

  /// Owning buffers alive on this core (each holds a reference to it).
  [[nodiscard]] std::size_t buffers() const noexcept { return buffers_; }
  /// A buffer of this core was made.
  void add_buffer() noexcept { ++buffers_; }
  /// A buffer of this core is gone.
  void remove_buffer() noexcept { --buffers_; }

  /// Calls f(base, bytes) for each slab.
  template <class F>
  void for_each_slab(F&& f) const {
    for (const auto& [base, slab] : slabs_) {
      f(static_cast<const void*>(base), slab.bytes);
    }
  }

  /// Calls f(address, bytes) for each range of consecutive blocks in use (handed out and not
  /// given back, or held by a buffer), ascending, none across slabs: what a backup of the pool
  /// must keep. Free blocks and never-carved slab ends are left out, and of a slab released for
  /// its buffers all but their blocks; the ranges add up to statistics().in_use_bytes.
  template <class F>
  void for_each_range_in_use(F&& f) const;

  /// state_error while the core's memory sleeps (a sleepable pool's): nothing may be taken.
  void require_awake() const { memory_.require_awake(); }
  /// What the core holds now; reset_high_water() starts its high-water again (a family, per key).
  [[nodiscard]] const pool_statistics& statistics() const noexcept { return stats_; }
  void reset_high_water() noexcept { stats_.high_water_bytes = stats_.in_use_bytes; }
  /// Takes with no free block of their class may get one of a larger class (graph_family).
  void reuse_larger_blocks(bool on) noexcept { free_.reuse_larger(on); }
  /// Whether takes may get larger blocks (reuse_larger_blocks()).
  [[nodiscard]] bool reuses_larger_blocks() const noexcept { return free_.reuses_larger(); }
  /// Whether a block of class `n` can be carved from the current small slab, with no growth.
  bool has_room(std::size_t n) const noexcept { return n <= small_limit && bump_left_ >= n; }
  /// The policy's own slab source (null: the runtime's allocators).
  [[nodiscard]] const std::shared_ptr<slab_source>& custom_source() const noexcept {
    return memory_.custom();
  }
  /// What the slabs' allocator holds free beyond its allocations now (slab_memory).
  [[nodiscard]] std::size_t allocator_room() const noexcept { return memory_.allocator_room(); }

private:
  struct slab_record {
    std::size_t bytes = 0;
    nvtx_regions::heap heap = nullptr; // null when no memory checker is attached
    std::size_t pins = 0;              // blocks of this slab held by buffers
    bool orphaned = false;             // released by its pool; kept only for its pinned blocks
    std::size_t tail = 0;              // bytes at its end never carved (a small slab left behind)
  };
  struct pinned_block {
    std::size_t bytes = 0;
    std::size_t refs = 0;
    bool returned = false; // its graph gave it back: the pool gets it with the last pin
    ready_event ready;
    nvtx_regions::heap heap = nullptr;
  };

  using slab_map = std::map<std::byte*, slab_record, std::greater<>>; // descending addresses

  typename slab_map::iterator find_slab(const void* block) noexcept {
    // The slab with the highest base not above the block (descending order: lower_bound).
    return slabs_.lower_bound(static_cast<std::byte*>(const_cast<void*>(block)));
  }
  slab_record& slab_of(const void* block) noexcept { return find_slab(block)->second; }

  void note_taken(void* block, std::size_t size, nvtx_regions::heap heap,
                  bool registered) noexcept {
    stats_.high_water_bytes = std::max(stats_.high_water_bytes, stats_.in_use_bytes += size);
    ++stats_.blocks_in_use;
    if (!registered) {
      nvtx_regions::mark_allocated(heap, block, size);
    }
  }
  void note_given_back(void* block, std::size_t size, nvtx_regions::heap heap) noexcept {
    stats_.in_use_bytes -= size;
    --stats_.blocks_in_use;
    nvtx_regions::mark_freed(heap, block);
  }

  std::byte* new_slab(std::size_t size, std::size_t requested) {
    void* slab = nullptr;
    std::size_t device_taken = size;
    if (const cudaError_t status = memory_.allocate(&slab, size, device_taken);
        status != cudaSuccess) {
      fail_to_grow(status, size, requested);
    }
    auto* base = static_cast<std::byte*>(slab);
    slabs_.emplace(base,
                   slab_record{size, memory_.registers_slabs() ? nvtx_regions::add_slab(base, size)
                                                               : nullptr});
    stats_.reserved_bytes += size;
    stats_.device_bytes += device_taken;
    ++stats_.slabs;
    return base;
  }

  GRAPHCAP_COLD [[noreturn]] void fail_to_grow(cudaError_t status, std::size_t size,
                                               std::size_t requested) const {
    const std::string hint = "the graph's pool could not grow by " + std::to_string(size) +
                             " bytes for a request of " + std::to_string(requested) +
                             " bytes (the pool holds " + std::to_string(stats_.reserved_bytes) +
                             " bytes in " + std::to_string(stats_.slabs) +
                             " slabs); free memory, or allocate less during the capture";
    if (memory_.custom()) { // a driver call failed (pool::sleepable's VMM): no last error set
      throw_error<out_of_memory_error>(status, memory_.allocating_call(), hint);
    }
    throw_cuda<out_of_memory_error>(status, memory_.allocating_call(), hint);
  }

  void free_slab(std::byte* slab, const slab_record& record) noexcept {
    nvtx_regions::remove_slab(record.heap);
    memory_.free(slab);
  }

  slab_memory memory_; // where slabs come from, and how they go back
  slab_map slabs_;     // base -> slab
  free_blocks free_;   // first in first out per size class
  // Blocks held by buffers: found by address (pin, unpin, and give_back while any exists),
  // never walked in order except to count them on release.
  std::unordered_map<void*, pinned_block> pinned_;
  std::byte* bump_next_ = nullptr; // the current small slab's next byte
  std::size_t bump_left_ = 0;
  nvtx_regions::heap bump_heap_ = nullptr;
  std::size_t buffers_ = 0;
  pool_statistics stats_{};
};
using pool_core = basic_pool_core<>;

template <class Deferred>
template <class F>
void basic_pool_core<Deferred>::for_each_range_in_use(F&& f) const {
  using range = std::pair<const std::byte*, std::size_t>;
  std::vector<range> holes; // not in use: free blocks and the current small slab's end
  free_.for_each([&](const void* block, std::size_t size) {
    holes.emplace_back(static_cast<const std::byte*>(block), size);
  });
  if (bump_left_ > 0) {
    holes.emplace_back(bump_next_, bump_left_);
  }
  std::vector<range> pinned; // where a released slab is in use
  for (const auto& [block, entry] : pinned_) {
    pinned.emplace_back(static_cast<const std::byte*>(block), entry.bytes);
  }
  std::sort(holes.begin(), holes.end());
  std::sort(pinned.begin(), pinned.end());
  auto hole = holes.begin();
  auto pin = pinned.begin();
  for (auto slab = slabs_.rbegin(); slab != slabs_.rend(); ++slab) { // ascending addresses
    const std::byte* at = slab->first;
    const std::byte* const end = at + slab->second.bytes - slab->second.tail;
    if (slab->second.orphaned) {
      for (; pin != pinned.end() && pin->first < end; ++pin) {
        if (pin->first >= at) {
          f(static_cast<const void*>(pin->first), pin->second);
        }
      }
      continue;
    }
    for (; hole != holes.end() && hole->first < end; ++hole) {
      if (hole->first > at) {
        f(static_cast<const void*>(at), static_cast<std::size_t>(hole->first - at));
      }
      at = std::max(at, hole->first + hole->second);
    }
    if (at < end) {
      f(static_cast<const void*>(at), static_cast<std::size_t>(end - at));
    }
  }
}

} // namespace detail::pool
} // namespace graphcap
