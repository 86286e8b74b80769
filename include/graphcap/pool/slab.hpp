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
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/buffer.hpp>
#include <graphcap/pool/detail/bridge_blocks.hpp>
#include <graphcap/pool/detail/completion_marker.hpp>
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
      marker_ = std::exchange(other.marker_, pool::completion_marker{});
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
    // Replays of a graph without a marker are not ordered before anything: the first give-back
    // that needs them finished waits for the device instead (give_back_all).
    unordered_replays_ = unordered_replays_ || (!marker_.recorded() && !held_.empty());
    marker_.capture_ended(/*next_capture_anew=*/Shared);
    if constexpr (Shared) {
      // A later capture into the shared pool may reuse what this one freed: the pool's rule
      // (replay in capture order, never concurrently) makes that safe.
      // This graph's replays still use the block, so memory checkers keep it valid.
      if (core_) {
        pool::give_back_freed(held_, *core_);
      }
    }
  }

  /// Nodes this policy added to the graph just captured (its completion marker, if it has one),
  /// which node_count() does not count.
  [[nodiscard]] std::size_t own_nodes() const noexcept { return marker_.recorded() ? 1 : 0; }

  /// The completion marker's event, made before the capture begins where a marker will be
  /// needed (see before_capture_end).
  void before_capture(cudaStream_t /*stream*/) {
    if (needs_marker()) {
      marker_.prepare();
    }
  }

  /// The completion marker: an event-record node after all the captured work, so that every
  /// replay records its event on the device when it finishes, and blocks can change hands
  /// ordered after it with no stream to remember. Only where blocks may change hands while this
  /// graph may still be replaying (a shared pool, or a pool another graph or a handle holds): a
  /// graph whose pool is its own pays no node on replay, and its reset waits for the device.
  void before_capture_end(cudaStream_t stream) {
    if (needs_marker()) {
      marker_.record(stream); // once, also when a wrong-thread end is retried
    }
  }

  /// The capture failed: every block goes back, as on reset.
  void on_capture_abort() noexcept { on_reset(); }

  /// Gives every block back, after this graph's last replay: a pool no other graph or handle
  /// shares is released (its slabs freed on the pool's own stream, ordered after the marker, or
  /// after a wait for the device where the graph has none); otherwise the blocks go back with
  /// the marker's event, which the next taker waits for.
  void on_reset() noexcept { give_back_all(/*may_release=*/true); }

  /// Before a recapture of the same graph: every block goes back, in allocation order and with
  /// the slabs kept, so that the same allocations in the new capture get the same blocks.
  void on_recapture() noexcept { give_back_all(/*may_release=*/false); }

  // -- introspection ---------------------------------------------------------------------------

  /// True when the graph last captured ends with a completion marker (an event-record node that
  /// every replay runs): with pool::shared, and with a pool whose handle exists.
  [[nodiscard]] bool has_completion_marker() const noexcept { return marker_.in_graph(); }

  /// A handle to this graph's pool, for other graphs to share it. From then on its captures end
  /// with a completion marker; replays of a graph captured before without one are waited for
  /// (once) before another graph can take a block.
  [[nodiscard]] pool_handle handle() {
    ensure_core();
    if (unordered_replays_) {
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
  /// The completion marker of the graph's captures.
  [[nodiscard]] const pool::completion_marker& marker() const noexcept { return marker_; }

  void ensure_core() {
    if (core_) {
      return;
    }
    if constexpr (std::is_void_v<Source>) {
      // A pool of its own: slabs that wait for the device when freed (no marker).
      core_ =
          std::make_shared<pool::pool_core>(nullptr, Shared ? pool::slab_release::after_markers
                                                            : pool::slab_release::waits_for_device);
    } else {
      core_ = std::make_shared<pool::pool_core>(std::make_shared<Source>());
    }
  }

private:
  friend struct pool::bridge_access; // a piecewise graph's blocks freed in a later segment

  void give_back_all(bool may_release) noexcept {
    freed_.clear();
    // The replays of a graph without a marker are ordered by nothing. Its slabs' cudaFree waits
    // for the device, and a recapture gives the blocks back to the same graph; but before they
    // can go to another graph, wait for the device as that cudaFree would.
    if (unordered_replays_ && shared_with_others()) {
      core_->wait_for_device();
      unordered_replays_ = false;
    }
    if (may_release) {
      unordered_replays_ = false; // released: cudaFree waits; or kept by buffers: see handle()
    }
    // After a reset the next capture gets a new marker; a recapture keeps it, so that an
    // update in place finds the same event in the new graph.
    const pool::ready_event marker = marker_.release(/*drop_event=*/may_release);
    if (!core_) {
      return;
    }
    if (marker) {
      core_->order_after(*marker); // slabs this core frees from now on wait for our replays
    }
    const bool releasing =
        may_release && !Shared && core_.use_count() == 1 + static_cast<long>(core_->buffers());
    for (const pool::held_block& entry : held_) {
      core_->give_back(entry.address, entry.size, releasing ? nullptr : marker);
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
  /// A marker where blocks may change hands while this graph may still be replaying, or where
  /// freeing a slab does not wait for the device (a user's memory pool).
  [[nodiscard]] bool needs_marker() const noexcept {
    return Shared || shared_with_others() || (core_ && !core_->frees_wait_for_device());
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
  pool::completion_marker marker_; // where blocks may change hands while the graph replays
  bool unordered_replays_ = false; // a graph without a marker held blocks: wait before handing on
};

} // namespace detail

namespace pool {

/// The graph's own pool (torch.cuda.graph's default). Blocks keep their address for every replay
/// and stay valid while the graph lives; reset() and destruction release the pool after the last
/// replay (waiting for the device, as cudaFree does: the graph carries no completion marker, so
/// replays cost what they cost on preallocated memory). pool() hands out a handle for other graphs
/// to share it; from then on its captures end with a completion marker, and resets do not wait.
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
              pool_with_own_nodes<private_pool> && pool_across_streams<private_pool> &&
              policy_that_checks_captures<private_pool>);
static_assert(pool_that_recaptures<shared> && pool_with_slabs<shared> &&
              pool_with_own_nodes<shared> && pool_across_streams<shared> &&
              policy_that_checks_captures<shared>);
static_assert(pool_that_recaptures<user> && pool_with_slabs<user> && pool_with_own_nodes<user> &&
              pool_across_streams<user> && policy_that_checks_captures<user>);

} // namespace pool
} // namespace graphcap
