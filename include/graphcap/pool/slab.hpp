// graphcap/pool/slab.hpp - the slab pools: pool::private_pool, pool::shared, pool::user.
//
// Memory allocated during a capture (scope::allocate<T>(n), make_buffer<T>(n)) comes from slabs
// of a pool_core (pool/detail/pool_core.hpp) and keeps its address for every replay:
//   pool::private_pool  the graph's own pool (what graphcap::graph uses);
//   pool::shared        a pool shared by the graphs given one pool_handle;
//   pool::user          slabs drawn from your cudaMemPool_t.
// docs/pools.md compares them with pool::off and pool::graph_memory_nodes.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/detail/allocation_size.hpp>
#include <graphcap/core/detail/capture.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/buffer.hpp>
#include <graphcap/pool/detail/bridge_blocks.hpp>
#include <graphcap/pool/detail/held_blocks.hpp>
#include <graphcap/pool/detail/pool_core.hpp>
#include <graphcap/pool/pool_handle.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

namespace detail {

/// What the private, shared and user pools have in common: blocks from a pool_core, a record of
/// the blocks this graph holds, and reuse of blocks freed during the capture. `Source`: where a
/// pool of its own takes its slabs (void: the runtime's allocators; else a pool::slab_source
/// made at the first allocation, as pool::sleepable's VMM chunks).
template <bool Shared, class Source = void>
class slab_pool : public policy_base<policy_kind::pool> {
public:
  /// scope::allocate() and make_buffer() exist.
  static constexpr bool can_allocate = true;
  /// pool() hands out a pool_handle.
  static constexpr bool has_handle = true;
  /// The blocks a capture freed go back to the pool when it ends (pool::shared), else at reset.
  static constexpr bool gives_back_at_capture_end = Shared;
  /// No flag: the graph's memory is the pool's, not memory nodes.
  static constexpr unsigned long long instantiate_flags = 0;

  /// A pool of its own, made at the first allocation or handle().
  slab_pool() noexcept = default;
  /// The pool behind `handle`.
  explicit slab_pool(const pool_handle& handle) noexcept
      : core_(pool_handle_access::core(handle)) {}
  /// A pool of its own whose slabs come from `source`.
  explicit slab_pool(cudaMemPool_t source) : core_(std::make_shared<pool::pool_core>(source)) {}

  /// Takes over the other policy's pool and blocks.
  slab_pool(slab_pool&& other) noexcept = default;
  /// Gives its own blocks back (on_reset), then takes over the other policy's.
  slab_pool& operator=(slab_pool&& other) noexcept {
    if (this != &other) {
      on_reset();
      core_ = std::move(other.core_);
      held_ = std::move(other.held_);
      freed_ = std::move(other.freed_);
      unordered_replays_ = std::exchange(other.unordered_replays_, false);
    }
    return *this;
  }
  slab_pool(const slab_pool&) = delete;
  slab_pool& operator=(const slab_pool&) = delete;
  /// Gives every block back (on_reset).
  ~slab_pool() { on_reset(); }

  /// `count` objects of T on `stream`. A block freed earlier in this capture on the same stream
  /// is reused (stream order makes that safe); otherwise the core hands out a block.
  template <class T>
  [[nodiscard]] T* allocate(std::size_t count, cudaStream_t stream) {
    return static_cast<T*>(held_[take(allocation_bytes<T>(count), stream)].address);
  }

  /// `count` objects of T on `stream` in a block that an owning buffer holds: it outlives the
  /// graph for as long as a copy of the buffer lives.
  template <class T>
  [[nodiscard]] buffer<T> make_buffer(std::size_t count, cudaStream_t stream) {
    pool::held_block& held = held_[take(allocation_bytes<T>(count), stream)];
    held.pinned = true;
    try {
      return buffer_access::make<T>(core_, static_cast<T*>(held.address), count, held.size);
    } catch (...) {
      held.pinned = false; // the block stays the graph's, like allocate()'s
      throw;
    }
  }

  /// Gives back a block allocated in this capture. Later allocations of the same size class on
  /// the same stream in this capture reuse it; the graph keeps it until reset.
  void deallocate(const void* block, cudaStream_t stream) {
    const std::size_t position = held_.find(block);
    if (position == pool::held_blocks::npos || held_[position].freed) {
      throw error("graphcap: deallocate() was given a pointer that this capture did not "
                  "allocate (or that was already deallocated)");
    }
    pool::held_block& held = held_[position];
    if (held.pinned) {
      throw error("graphcap: deallocate() was given the memory of a graphcap::buffer; a buffer "
                  "gives its memory back when its last copy is dropped (buffer::reset())");
    }
    freed_[{stream, held.size}].push_back(position); // may throw: the block is not freed yet
    held.freed = true;
  }

  /// A stream whose capture has ended (a conditional body's own stream, destroyed next): what
  /// was freed on it is not handed to later work on a stream that gets the same handle, which
  /// stream order would not protect. The blocks stay the graph's until reset.
  void forget_stream(cudaStream_t stream) noexcept {
    std::erase_if(freed_, [stream](const auto& entry) { return entry.first.first == stream; });
  }

  /// A conditional body's stream whose capture has ended: the blocks freed on it become `to`'s,
  /// the stream the conditional node was captured on, whose later work runs after the body.
  /// Where memory runs out they are forgotten instead (kept by the graph, not reused).
  void hand_over_stream(cudaStream_t from, cudaStream_t to) noexcept {
    try {
      for (auto entry = freed_.begin(); entry != freed_.end();) {
        if (entry->first.first != from) {
          ++entry;
          continue;
        }
        std::vector<std::size_t>& target = freed_[{to, entry->first.second}];
        target.insert(target.end(), entry->second.begin(), entry->second.end());
        entry = freed_.erase(entry);
      }
    } catch (...) {
      forget_stream(from);
    }
  }

  // -- hooks ---------------------------------------------------------------------------------

  /// check_capture (core/policy.hpp): state_error while the pool's memory sleeps (a sleepable
  /// pool's handle given to pool::shared or private_pool, or pool::sleepable): nothing begins.
  void check_capture() const {
    if (core_) {
      core_->require_awake();
    }
  }

  /// The capture succeeded: a shared pool's blocks freed during it go back to the pool.
  void after_capture_end(cudaGraph_t /*graph*/) noexcept {
    freed_.clear();
    // The graph's replays are ordered before nothing (no marker, no stream remembered): the
    // first give-back that hands its blocks on, or frees slabs with a free that does not wait,
    // waits for the device first (give_back_all).
    unordered_replays_ = unordered_replays_ || !held_.empty();
    if constexpr (Shared) {
      // A later capture into the shared pool may reuse what this one freed: the pool's rule
      // (replay in capture order, never concurrently) makes that safe.
      // This graph's replays still use the block, so memory checkers keep it valid.
      if (core_) {
        pool::give_back_freed(held_, *core_);
      }
    }
  }

  /// The capture failed: every block goes back, as on reset.
  void on_capture_abort() noexcept { on_reset(); }

  /// Gives every block back, after this graph's last replay: a pool no other graph or handle
  /// shares is released (its slabs freed with cudaFree, which waits for the device; a user's
  /// pool or VMM chunks after a wait for the device); otherwise the blocks go back to the pool
  /// after a wait for the device, so that no later capture gets memory a replay still uses.
  void on_reset() noexcept { give_back_all(/*may_release=*/true); }

  /// Before a recapture of the same graph: every block goes back, in allocation order and with
  /// the slabs kept, so that the same allocations in the new capture get the same blocks.
  void on_recapture() noexcept { give_back_all(/*may_release=*/false); }

  // -- introspection ---------------------------------------------------------------------------

  /// A handle to this graph's pool, for other graphs to share it. If the graph was captured
  /// already, its replays may still run while another graph takes a block it gave back to the
  /// pool (a recapture's): wait for the device first (as its reset will).
  [[nodiscard]] pool_handle handle() {
    ensure_core();
    if (unordered_replays_ && !Shared && !shared_with_others()) { // else give-backs wait already
      core_->wait_for_device();
    }
    return pool_handle_access::make(core_);
  }
  /// Calls f(base, bytes) for each slab of the pool (all of them: a shared pool's memory is
  /// internal to every graph that draws from it).
  template <class F>
  void for_each_slab(F&& f) const {
    if (core_) {
      core_->for_each_slab(std::forward<F>(f));
    }
  }
  /// What the pool holds (all graphs of a shared pool together).
  [[nodiscard]] pool_statistics statistics() const noexcept {
    return core_ ? core_->statistics() : pool_statistics{};
  }

protected:
  /// The pool's core (null until the first allocation or handle()).
  [[nodiscard]] const std::shared_ptr<pool::pool_core>& core() const noexcept { return core_; }

  void ensure_core() {
    if (core_) {
      return;
    }
    if constexpr (std::is_void_v<Source>) {
      // A pool of its own: slabs that wait for the device when freed.
      core_ = std::make_shared<pool::pool_core>(
          nullptr, Shared ? pool::slab_release::after_wait : pool::slab_release::waits_for_device);
    } else {
      core_ = std::make_shared<pool::pool_core>(std::make_shared<Source>());
    }
  }

private:
  friend struct pool::bridge_access; // a piecewise graph's blocks freed in a later segment

  // The handover rule without a per-replay marker (docs/pools.md, "When blocks change hands"):
  // the replays of a graph are ordered before nothing, so before its blocks can go to another
  // graph (a shared pool, or one that a handle or another graph holds), or its slabs be freed
  // by a free that does not wait (a user's pool, VMM chunks), wait for the device, once, here.
  // A private pool's own cudaFree waits by itself; a recapture of a pool no one shares gives the
  // blocks back to the same graph (a later handle() waits for it).
  void give_back_all(bool may_release) noexcept {
    freed_.clear();
    if (!core_) {
      unordered_replays_ = false;
      return;
    }
    const bool releasing =
        may_release && !Shared && core_.use_count() == 1 + static_cast<long>(core_->buffers());
    const bool hands_on = Shared || shared_with_others();
    if (unordered_replays_ && (hands_on || (releasing && !core_->frees_wait_for_device()))) {
      core_->wait_for_device();
      unordered_replays_ = false;
    }
    if (may_release) {
      unordered_replays_ = false; // released: cudaFree waits; or kept by buffers: see handle()
    }
    for (const pool::held_block& entry : held_) {
      core_->give_back(entry.address, entry.size);
    }
    if (may_release) {
      held_.release(); // a reset graph holds nothing
    } else {
      held_.clear(); // a recapture records as many blocks again
    }
    if (releasing) {
      core_->release_slabs();
    }
  }

  /// Another graph or a pool_handle holds this pool: its blocks may change hands.
  [[nodiscard]] bool shared_with_others() const noexcept {
    return core_ && core_.use_count() > 1 + static_cast<long>(core_->buffers());
  }

  /// The position in held_ of a block for `bytes` on `stream`: the block this capture freed
  /// last on that stream in that size class, or a new one from the core. O(log) in the
  /// (stream, size class) pairs freed from, amortized O(1) in the blocks held.
  std::size_t take(std::size_t bytes, cudaStream_t stream) {
    std::size_t size = pool::pool_core::size_class(bytes);
    // Its class only, or any class at least as large when the core reuses larger blocks.
    const bool or_larger = core_ && core_->reuses_larger_blocks();
    for (auto reusable = freed_.lower_bound({stream, size});
         reusable != freed_.end() && reusable->first.first == stream &&
         (or_larger
              ? pool::free_blocks::fits_larger(size, reusable->first.second, core_->has_room(size))
              : reusable->first.second == size);
         ++reusable) {
      if (!reusable->second.empty()) {
        core_->require_awake(); // a block this capture freed is unmapped too while asleep
        const std::size_t position = reusable->second.back();
        reusable->second.pop_back();
        held_[position].freed = false;
        return position;
      }
    }
    ensure_core();
    held_.reserve_one(); // so that add() below cannot throw once the core handed out a block
    void* const block = core_->take(bytes, size);
    return held_.add(block, size);
  }

  std::shared_ptr<pool::pool_core> core_;
  pool::held_blocks held_; // blocks this graph holds until reset, in allocation order, by address
  // This capture's freed blocks (positions in held_) by stream and size class, last freed last.
  std::map<std::pair<cudaStream_t, std::size_t>, std::vector<std::size_t>> freed_;
  bool unordered_replays_ = false; // captured with blocks: wait for the device before handing on
};

} // namespace detail

namespace pool {

/// The graph's own pool (torch.cuda.graph's default). Blocks keep their address for every replay
/// and stay valid while the graph lives; reset() and destruction release the pool after the last
/// replay (waiting for the device, as cudaFree does: the graph carries no node of the pool's, so
/// replays cost what they cost on preallocated memory). pool() hands out a handle for other graphs
/// to share it; from then on its reset waits for the device before its blocks change hands.
struct private_pool : detail::slab_pool<false> {
  using slab_pool::slab_pool;
};

/// A pool shared by the graphs given one pool_handle (graph_pool_handle(), or another graph's
/// pool()). Safe when the graphs replay in capture order and never concurrently; see
/// pool_handle.hpp.
struct shared : detail::slab_pool<true> {
  using slab_pool::slab_pool;
};

/// Like private_pool, with slabs drawn from your cudaMemPool_t (`graph_with<pool::user> g{mp};`)
/// and given back to it on reset. The memory pool must outlive the graph.
struct user : detail::slab_pool<false> {
  /// Slabs from `source`, which must outlive the graph.
  explicit user(cudaMemPool_t source) : slab_pool(source) {}
};

// The optional hooks the slab pools offer (core/policy.hpp): a misspelt one fails here.
static_assert(pool_that_recaptures<private_pool> && pool_with_slabs<private_pool> &&
              pool_across_streams<private_pool> && policy_that_checks_captures<private_pool> &&
              pool_with_bridges<private_pool>);
static_assert(pool_that_recaptures<shared> && pool_with_slabs<shared> &&
              pool_across_streams<shared> && policy_that_checks_captures<shared> &&
              pool_with_bridges<shared>);
static_assert(pool_that_recaptures<user> && pool_with_slabs<user> && pool_across_streams<user> &&
              policy_that_checks_captures<user> && pool_with_bridges<user>);

} // namespace pool
} // namespace graphcap
