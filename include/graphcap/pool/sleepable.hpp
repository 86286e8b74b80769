// graphcap/pool/sleepable.hpp - pool::sleepable: a slab pool whose memory can sleep.
//
//   graphcap::graph_with<graphcap::pool::sleepable> g;
//   g.capture(stream, work);
//   auto pool = g.pool();                      // a sleepable_pool_handle
//   pool.sleep(graphcap::pool::backup::host);  // the GPU memory goes back to the driver
//   ...                                        // something else uses the GPU
//   pool.wake();                               // the same addresses, the same contents
//   g.replay(stream);                          // no recapture, no update
//
// Its slabs are chunks of CUDA virtual memory (pool/detail/vmm_chunks.hpp), carved into blocks by
// the slab pools' bookkeeping (pool/detail/pool_core.hpp): a block from a free list costs what a
// slab pool's does. sleep() releases every physical page and keeps the addresses reserved;
// wake() maps new pages at the same addresses. Graphs given the same handle share the pool, as
// pool::shared's do. docs/pools.md, "A pool that can sleep", says what goes stale (NCCL and IPC
// registrations) and what to do.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/wing_contract.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/buffer.hpp>
#include <graphcap/pool/detail/pool_core.hpp>
#include <graphcap/pool/detail/vmm_chunks.hpp>
#include <graphcap/pool/pool_handle.hpp>
#include <graphcap/pool/slab.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace graphcap {

namespace pool {
/// What sleep() does with the contents of the pool's memory.
enum class backup : unsigned char {
  none, ///< dropped: after wake() the pool's memory holds garbage until written again
  host, ///< copied to host memory first, and back by wake(): replays are bit-identical
};
} // namespace pool

namespace detail::pool {
struct sleepable_access;
} // namespace detail::pool

/// A handle to a sleepable pool (pool::sleepable): shares it between graphs, as pool_handle
/// does, and puts its memory to sleep and wakes it. Copies refer to the same pool.
template <class = void>
class basic_sleepable_pool_handle : public pool_handle {
public:
  /// A handle to a new, empty sleepable pool (no CUDA call until its first allocation).
  /// \throws std::bad_alloc only.
  basic_sleepable_pool_handle()
      : basic_sleepable_pool_handle(
            detail::pool_handle_access::make(std::make_shared<detail::pool::pool_core>(
                std::make_shared<detail::pool::vmm_chunks>()))) {}

  /// A sleepable handle to the pool behind `pool` (a graph_family's or graph_cache's pool() of
  /// pool::sleepable graphs). \throws error if that pool cannot sleep.
  explicit basic_sleepable_pool_handle(const pool_handle& pool) : pool_handle(pool) {
    if (dynamic_cast<detail::pool::vmm_chunks*>(core().custom_source().get()) == nullptr) {
      throw error(
          "graphcap: basic_sleepable_pool_handle was given the handle of a pool that cannot "
          "sleep: only pool::sleepable graphs (and their families and caches) have one");
    }
  }

  /// Releases every physical page of the pool, keeping its addresses; with backup::host, copies
  /// the blocks in use (not the free ones) to host memory first: pageable memory taken for the
  /// backup, through two pinned staging buffers of up to 32 MiB kept for the next sleep (or,
  /// with keep_backup_memory(true), pinned memory of the backup's size, kept). First waits for the
  /// device (the last replay of every graph captured into the pool: no replay stream is
  /// remembered and the graphs carry no marker), so that none still uses the memory.
  /// \throws state_error while a capture into the pool is open, or if it sleeps already;
  /// cuda_error if a call fails. \post asleep. After a cuda_error before any page went, the pool
  /// is as it was; after one later, it is asleep and sleep() again releases the rest.
  void sleep(graphcap::pool::backup how = graphcap::pool::backup::none) {
    detail::pool::vmm_chunks& memory = chunks();
    if (memory.open_captures() > 0) {
      throw state_error("graphcap: sleep() on a sleepable pool while a capture into it is open: "
                        "end (or abandon) the capture first");
    }
    if (memory.asleep() && !memory.holds_memory()) {
      throw state_error("graphcap: sleep() on a sleepable pool that is asleep already: wake() "
                        "it first");
    }
    const detail::relaxed_capture_mode_guard relaxed; // another thread may capture (global)
    core().wait_for_device(); // every replay of the pool's graphs has finished
    detail::pool::device_ranges in_use;
    if (how == graphcap::pool::backup::host) {
      core().for_each_range_in_use([&](const void* block, std::size_t bytes) {
        in_use.emplace_back(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(block)),
                            bytes);
      });
    }
    memory.sleep(how == graphcap::pool::backup::host, in_use);
  }

  /// Maps new physical pages at the pool's addresses and copies the backup (if any) back.
  /// \throws state_error if the pool is awake; out_of_memory_error (or cuda_error) if a call
  /// fails. \post awake, its contents back (backup::host). On a throw it stays asleep, gives back
  /// what this wake took and keeps its backup, and wake() can be called again.
  void wake() {
    detail::pool::vmm_chunks& memory = chunks();
    if (!memory.asleep()) {
      throw state_error("graphcap: wake() on a sleepable pool that is awake");
    }
    const detail::relaxed_capture_mode_guard relaxed;
    memory.wake();
  }

  /// With `keep`, sleep(backup::host) copies into pinned host memory of the backup's size, which
  /// wake() keeps for the next sleep: the fastest cycles, for pinned memory held while the pool
  /// is awake (backup_memory()). Off by default: the backup is pageable memory that wake() frees,
  /// and the pool keeps only the staging buffers (64 MiB at most); keep_backup_memory(false)
  /// frees what is kept now, the staging buffers too.
  void keep_backup_memory(bool keep) noexcept { chunks().keep_backup_memory(keep); }

  /// Maps `bytes` of device memory (rounded up to the allocation granularity: 2 MiB on the
  /// H200) in one piece now, with one cuMemCreate and cuMemMap, for the pool's next slabs: a
  /// capture that fits in it grows the pool with no driver call, and a sleep and a wake handle
  /// it as one piece, the first sleep too (one cuMemUnmap). Size it from a first capture (its
  /// pool's statistics().reserved_bytes) or give what the captures will take; slabs beyond it
  /// grow the pool as before. \throws out_of_memory_error where `bytes` is more than the
  /// device's free memory or the driver has none; state_error while the pool sleeps or if it has
  /// a carve already (one per pool); error for 0 bytes. \post carved; on a throw nothing taken.
  void carve(std::size_t bytes) {
    const detail::relaxed_capture_mode_guard relaxed; // another thread may capture (global)
    chunks().carve(bytes);
  }
  /// Bytes of the pool's carve (0: none), part of resident_bytes() while awake.
  [[nodiscard]] std::size_t carved_bytes() const noexcept { return chunks().carved_bytes(); }

  /// True from sleep() (a failed one too) until wake() succeeds.
  [[nodiscard]] bool asleep() const noexcept { return chunks().asleep(); }
  /// Bytes of physical device memory the pool holds now (0 while it sleeps).
  [[nodiscard]] std::size_t resident_bytes() const noexcept { return chunks().resident_bytes(); }
  /// Bytes of host memory holding the backup of a sleeping pool (0: none): the pool's
  /// statistics().in_use_bytes when it fell asleep, the bytes copied each way.
  [[nodiscard]] std::size_t backup_bytes() const noexcept { return chunks().backup_bytes(); }
  /// Bytes of pinned host memory the pool holds for backups: the staging buffers, and with
  /// keep_backup_memory(true) the backup's own (a backup, or kept for the next).
  [[nodiscard]] std::size_t backup_memory() const noexcept { return chunks().backup_memory(); }

private:
  friend struct detail::pool::sleepable_access;
  struct trusted {};
  basic_sleepable_pool_handle(trusted /*tag*/, pool_handle base) noexcept
      : pool_handle(std::move(base)) {}

  [[nodiscard]] detail::pool::pool_core& core() const noexcept {
    return *detail::pool_handle_access::core(*this);
  }
  [[nodiscard]] detail::pool::vmm_chunks& chunks() const noexcept {
    return static_cast<detail::pool::vmm_chunks&>(*core().custom_source());
  }
};
/// What to name: basic_sleepable_pool_handle<> (a template only so that its bodies compile where
/// used).
using sleepable_pool_handle = basic_sleepable_pool_handle<>;

namespace detail::pool {

/// For pool::sleepable: a handle for a sleepable core, and the chunks behind a handle.
struct sleepable_access {
  /// A sleepable handle to the pool of `handle` (whose core must be sleepable).
  static sleepable_pool_handle make(pool_handle handle) noexcept {
    return sleepable_pool_handle{sleepable_pool_handle::trusted{}, std::move(handle)};
  }
  /// The chunks of the pool behind `handle`, or null if its pool cannot sleep.
  static vmm_chunks* chunks(const pool_handle& handle) noexcept {
    return dynamic_cast<vmm_chunks*>(pool_handle_access::core(handle)->custom_source().get());
  }
};

} // namespace detail::pool

namespace detail::pool {

/// The sleepable slab pools: pool::sleepable (`Shared` false: the blocks a capture freed stay
/// the graph's until reset, as private_pool's) and pool::sleepable_shared (true: they go back to
/// the pool at the capture's end, as pool::shared's).
template <bool Shared>
class sleepable_slab : public slab_pool<Shared, vmm_chunks> {
  using base = slab_pool<Shared, vmm_chunks>;

public:
  /// What handle() gives, and what a graph_family or graph_cache of these graphs makes its pool
  /// with.
  using handle_type = sleepable_pool_handle;

  /// A pool of its own, made at the first allocation or pool().
  sleepable_slab() noexcept = default;
  /// The pool behind `handle`, which must be a sleepable one (graphcap::error otherwise).
  explicit sleepable_slab(const pool_handle& handle) : base(checked(handle)) {
    memory_ = sleepable_access::chunks(handle);
  }

  // A capture (check_capture) and an allocation (the pool core's take) while the pool sleeps are
  // state_errors of the slab pools' own, as for every graph drawing from a sleeping pool.

  /// The capture counts as open (sleep refuses); check_capture refused it while asleep.
  void before_capture(cudaStream_t /*stream*/) {
    this->ensure_core();
    memory_ = &static_cast<vmm_chunks&>(*this->core()->custom_source());
    memory_->capture_opened();
    capturing_ = true;
  }
  /// The capture ended: sleep may come, and will wait for the device (this graph's replays).
  void after_capture_end(cudaGraph_t graph) noexcept {
    close_capture();
    base::after_capture_end(graph);
  }
  /// The capture failed: sleep may come; every block goes back.
  void on_capture_abort() noexcept {
    close_capture();
    base::on_capture_abort();
  }
  /// state_error while the pool sleeps: nothing is launched.
  void before_replay(cudaStream_t /*stream*/) const {
    if (memory_ != nullptr && memory_->asleep()) [[unlikely]] {
      throw_asleep("replay");
    }
  }

  /// A handle to this graph's pool, to share it and to put it to sleep.
  [[nodiscard]] sleepable_pool_handle handle() {
    sleepable_pool_handle shared = sleepable_access::make(base::handle());
    memory_ = &static_cast<vmm_chunks&>(*this->core()->custom_source());
    return shared;
  }

private:
  static const pool_handle& checked(const pool_handle& handle) {
    if (sleepable_access::chunks(handle) == nullptr) {
      throw error("graphcap: pool::sleepable was given the handle of a pool that cannot sleep: "
                  "give it a sleepable_pool_handle (sleepable_pool_handle{}, or another "
                  "pool::sleepable graph's pool())");
    }
    return handle;
  }
  GRAPHCAP_COLD [[noreturn]] static void throw_asleep(const char* what) {
    throw state_error(std::string{"graphcap: cannot "} + what +
                      " while the graph's sleepable pool is asleep: call wake() on its "
                      "sleepable_pool_handle first");
  }
  void close_capture() noexcept {
    if (capturing_) {
      memory_->capture_closed();
      capturing_ = false;
    }
  }

  vmm_chunks* memory_ = nullptr; // the pool's chunks, once it has a core
  bool capturing_ = false;       // a capture counted in memory_ is open
};

} // namespace detail::pool

namespace pool {

/// A slab pool on CUDA virtual memory that can sleep: the graph's own pool (as private_pool), or
/// one shared by the graphs given a sleepable_pool_handle (another sleepable graph's pool()).
/// Replays, captures and allocations while the pool sleeps throw state_error with nothing
/// launched; after wake() the graphs replay as they are. The blocks a capture freed stay the
/// graph's until its reset, as private_pool's.
struct sleepable : detail::pool::sleepable_slab<false> {
  using sleepable_slab::sleepable_slab;
};

/// pool::sleepable whose captures give the blocks they freed back to the pool at their end, as
/// pool::shared's do: what graphs replayed one at a time in capture order share (a graph_family,
/// piecewise segments), so that the pool holds about the largest capture's working set. The
/// shared pool's rule holds (pool_handle.hpp): never two of its graphs' replays at once.
struct sleepable_shared : detail::pool::sleepable_slab<true> {
  using sleepable_slab::sleepable_slab;
};

static_assert(pool_that_recaptures<sleepable> && pool_with_slabs<sleepable> &&
              pool_across_streams<sleepable> && policy_that_checks_captures<sleepable> &&
              pool_with_bridges<sleepable> && pool_with_handle_type<sleepable>);
static_assert(pool_that_recaptures<sleepable_shared> && pool_with_slabs<sleepable_shared> &&
              pool_across_streams<sleepable_shared> &&
              policy_that_checks_captures<sleepable_shared> &&
              pool_with_bridges<sleepable_shared> && pool_with_handle_type<sleepable_shared>);

} // namespace pool
} // namespace graphcap
