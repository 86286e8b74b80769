// graphcap/families/detail/family_memory.hpp - what graph_family knows of its device memory: the
// per-key pool and executable figures its ledger shows (families/ledger.hpp), capture_all()'s
// byte budget (families/detail/byte_ladder.hpp), and releasing and restoring its executables.
// graph_family derives from it (CRTP: `Family` is the graph_family, which befriends it); its
// hooks are one call each, and the public members below are graph_family's.
#pragma once

#include <graphcap/families/detail/byte_ladder.hpp>
#include <graphcap/families/detail/executable_memory.hpp>
#include <graphcap/families/family_types.hpp>
#include <graphcap/families/ledger.hpp>

#include <graphcap/core/stream_ref.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/pool/pool_handle.hpp>
#include <graphcap/pool/pool_statistics.hpp>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::families {

/// The memory side of a graph_family of `Key`s (`Family`).
template <class Key, class Family>
class family_memory {
public:
  /// capture_all(keys, stream, work) under a byte budget: keys largest first, each captured and
  /// then instantiated only if its pool growth and its predicted executable bytes fit what is
  /// left (docs/families.md); the others go into the result's left_out (and left_out()), their
  /// requests to the next larger key. family_budget_error if not even the smallest key fits.
  template <class Work>
  family_capture_result<Key> capture_all(std::vector<Key> keys, byte_budget budget,
                                         stream_ref stream, Work work) {
    if (family().options_.one_executable) {
      throw error("graphcap: graph_family::capture_all() under a byte_budget in one_executable "
                  "mode: its keys share executables by group, which the budget does not count; "
                  "use the default mode, one executable per key");
    }
    ladder_.emplace(budget.bytes);
    left_out_.clear();
    const budget_guard guard{*this};
    family_capture_result<Key> result =
        family().capture_all(std::move(keys), stream, std::move(work));
    end_budget(result, budget.bytes);
    return result;
  }
  /// The device memory its executables took, measured at each instantiation (the drop of
  /// cudaMemGetInfo's free bytes under graphcap's lock; ledger() spreads it over the keys); the
  /// pool's is pool().statistics().
  [[nodiscard]] std::size_t executable_bytes() const noexcept {
    const Family& self = static_cast<const Family&>(*this);
    std::size_t bytes = self.options_.one_executable ? self.groups_.device_bytes() : 0;
    for (const auto& each : self.entries_) {
      bytes += self.options_.one_executable ? 0 : each->statistics.executable_bytes;
    }
    return bytes;
  }
  /// A table of every key's statistics, then the ledger (`std::cout << family` prints it).
  [[nodiscard]] std::string report() const {
    std::ostringstream out;
    out << static_cast<const Family&>(*this);
    return out.str();
  }
  /// Writes report() to `out`.
  friend std::ostream& operator<<(std::ostream& out, const Family& family) {
    return family_memory::write_report(out, family);
  }
  /// What the last capture_all() under a byte_budget left out, and why.
  [[nodiscard]] const std::vector<family_left_out<Key>>& left_out() const noexcept {
    return left_out_;
  }
  /// The family's device memory per key and in all (families/ledger.hpp says how each figure is
  /// measured).
  /// \throws state_error when the current device is not the one its keys were captured on.
  [[nodiscard]] family_ledger<Key> ledger() const { return make_ledger(true); }
  /// Destroys every key's executable graph and keeps its template, for a family that sleeps;
  /// restore_executables() (or each key's next replay, lazily) makes them again. The driver
  /// keeps their memory (docs/families.md): the ledger counts it as held, unless `memory` is
  /// executable_memory::give_back, which presses the driver to give its unused pieces back (the
  /// ledger's executable_given_back_bytes: what cudaMemGetInfo gained).
  /// \throws state_error in one_executable mode (whose groups hand one executable from key to
  /// key), or to give back on another device than the keys' (nothing released then);
  /// cuda_error from the give-back's queries (every key released then).
  /// \post every key holds its template and no executable.
  void release_executables(executable_memory memory = executable_memory::keep_cached) {
    if (family().options_.one_executable) {
      throw state_error("graphcap: graph_family::release_executables() in one_executable mode: "
                        "its groups hand one executable from key to key; release is for the "
                        "default mode, one executable per key");
    }
    if (memory == executable_memory::give_back) { // the squeeze presses the current device
      require_device(device_, "graph_family::release_executables(give_back)");
    }
    if (!released_) {
      given_back_ = 0; // what an earlier release gave back went into the wake's instantiations
    }
    for (auto& each : family().entries_) {
      each->graph->release_executable(); // a piecewise graph: every segment's
    }
    released_ = true;
    if (memory == executable_memory::give_back) {
      const std::lock_guard<std::mutex> held(instantiation_lock()); // no measure overlaps it
      given_back_ += squeeze_executable_cache();
    }
  }
  /// Instantiates every released executable again, now (each measured, as at its capture; what
  /// the driver takes again of the memory it gave back is not counted twice).
  /// \throws cuda_error if an instantiation fails: the keys before it hold executables, the
  /// others stay released (a later call, or their replays, make them).
  /// \post every key holds an executable.
  void restore_executables() {
    if (!released_) {
      return;
    }
    for (auto& each : family().entries_) {
      if (each->graph->state() != graph_state::instantiated) {
        std::size_t taken = instantiate_locked(*each->graph, each->statistics.executable_nodes);
        const std::size_t taken_back = std::min(taken, given_back_);
        given_back_ -= taken_back;
        each->statistics.executable_bytes += taken - taken_back;
      }
    }
    released_ = false;
    given_back_ = 0;
  }

protected:
  /// Before a key's capture: the family's device (at its first), and the pool's high-water from
  /// now on. `core`: the pool's core.
  template <class Core>
  void before_capture(Core& core) {
    if (device_ < 0) {
      device_ = current_device();
    }
    core.reset_high_water();
  }

  /// After a capture into `graph` (`before`: the pool before it; `core`: the pool's core): its
  /// pool and node figures into `counts`.
  template <class Graph, class Core>
  static void note_capture(const Graph& graph, family_key_statistics& counts,
                           const pool_statistics& before, const Core& core) {
    const pool_statistics& after = core.statistics();
    counts.pool_bytes = after.reserved_bytes > before.reserved_bytes
                            ? after.reserved_bytes - before.reserved_bytes
                            : 0;
    counts.pool_device_bytes =
        after.device_bytes > before.device_bytes ? after.device_bytes - before.device_bytes : 0;
    counts.pool_in_use_bytes =
        after.in_use_bytes > before.in_use_bytes ? after.in_use_bytes - before.in_use_bytes : 0;
    counts.pool_high_water_bytes = after.high_water_bytes;
    counts.executable_nodes = graph_weight(graph);
  }

  /// The nodes of `graph` that take executable memory (a piecewise graph: its segments').
  template <class Graph>
  static std::size_t graph_weight(const Graph& graph) {
    if constexpr (requires { graph.raw_graph(); }) {
      return weighted_nodes(graph.raw_graph());
    } else {
      std::size_t weight = 0;
      for (std::size_t k = 0; k < graph.segment_count(); ++k) {
        weight += weighted_nodes(graph.segment(k).raw_graph());
      }
      return weight;
    }
  }

  /// The family's capture stream in `stream`, made at the first capture and measured (the
  /// ledger's stream_bytes; charged to a budget).
  cudaStream_t measured_stream(stream_handle& stream) {
    if (stream) {
      return stream.get();
    }
    const free_figure before;
    ensure_stream(stream);
    const std::size_t taken = before.taken_since(0);
    stream_bytes_ += taken;
    if (ladder_) {
      ladder_->charge_pool(taken);
    }
    return stream.get();
  }

  /// Then, unless the budget leaves `key` out (false: the caller drops it, and while
  /// `nothing_kept` the pool's slabs go back), its measured instantiation.
  template <class Graph, class Core>
  bool admit(const Key& key, Graph& graph, family_key_statistics& counts, Core& core,
             bool nothing_kept) {
    if (ladder_) {
      const std::size_t bytes = ladder_->predict(counts.pool_device_bytes, counts.executable_nodes);
      if (!ladder_->fits(bytes)) {
        left_out_.push_back(left_out_entry(key, bytes, ladder_->left()));
        std::size_t stays = counts.pool_device_bytes;
        if (nothing_kept) {
          graph.reset(); // its blocks back to the pool, then the pool's slabs to the device
          const std::size_t held = core.statistics().device_bytes;
          core.release_slabs(true); // and their reserve: the next key's drop is measured
          const std::size_t gone = held - core.statistics().device_bytes; // the pool's stream stays
          stays = stays > gone ? stays - gone : 0;
        }
        ladder_->charge_pool(stays);
        return false;
      }
    }
    counts.executable_bytes += instantiate_locked(graph, counts.executable_nodes);
    if (ladder_) {
      ladder_->charge(counts.pool_device_bytes, counts.executable_bytes, counts.executable_nodes);
    }
    return true;
  }

  /// The ledger; `checked`: state_error on another device than the keys'.
  family_ledger<Key> make_ledger(bool checked) const {
    const Family& self = static_cast<const Family&>(*this);
    const std::vector<Key>& keys = self.keys_;
    const auto& entries = self.entries_;
    const pool_statistics& pool = self.pool_.statistics();
    if (checked) {
      require_device(device_, "graph_family::ledger()");
    }
    family_ledger<Key> ledger;
    ledger.pool_reserved_bytes = pool.reserved_bytes;
    ledger.pool_device_bytes = pool.device_bytes;
    ledger.stream_bytes = stream_bytes_;
    ledger.pool_in_use_bytes = pool.in_use_bytes;
    ledger.pool_high_water_bytes = pool.high_water_bytes;
    ledger.bytes_per_node = process_rate().per_node();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const family_key_statistics& counts = entries[i]->statistics;
      ledger.rows.push_back({keys[i], counts.nodes, counts.executable_nodes, counts.pool_bytes,
                             counts.pool_device_bytes, counts.pool_in_use_bytes,
                             counts.pool_high_water_bytes, 0, counts.executable_bytes,
                             entries[i]->graph->state() == graph_state::instantiated, 0});
    }
    for (const auto& row : ledger.rows) { // each key's capture restarts the pool's high-water
      ledger.pool_high_water_bytes =
          std::max(ledger.pool_high_water_bytes, row.pool_high_water_bytes);
    }
    spread_executable_bytes(ledger, self.executable_bytes(),
                            pool_handle_access::core(self.pool_)->allocator_room());
    if (!released_) { // one-executable mode: a key without its group's executable holds none
      ledger.executable_held_bytes = 0;
    }
    // What the driver gave back (at most what released keys hold: a key woken lazily took its
    // share again, unmeasured).
    ledger.executable_given_back_bytes = std::min(given_back_, ledger.executable_held_bytes);
    ledger.executable_held_bytes -= ledger.executable_given_back_bytes;
    return ledger;
  }

  /// Forgets the device, the release and what was left out (the family was cleared).
  void forget() noexcept {
    device_ = -1;
    released_ = false;
    given_back_ = 0;
    left_out_.clear();
  }

private:
  struct budget_guard { // the budget holds for one capture_all(), thrown out of or not
    family_memory& self;
    explicit budget_guard(family_memory& owner) noexcept : self(owner) {}
    budget_guard(const budget_guard&) = delete;
    budget_guard& operator=(const budget_guard&) = delete;
    budget_guard(budget_guard&&) = delete;
    budget_guard& operator=(budget_guard&&) = delete;
    ~budget_guard() { self.ladder_.reset(); }
  };
  Family& family() noexcept { return static_cast<Family&>(*this); }

  /// The report: a table of the keys' statistics (family_support.hpp), then the ledger.
  static std::ostream& write_report(std::ostream& out, const Family& self) {
    write_family_report(out, self.keys_, self.options_.one_executable,
                        self.pool_.statistics().reserved_bytes, self.executables(),
                        self.executable_bytes(),
                        [&](std::size_t i) -> const family_key_statistics& {
                          return self.entries_[i]->statistics;
                        });
    return out << self.make_ledger(false);
  }

  /// capture_all() ended: family_budget_error if the budget left every key out.
  void end_budget(family_capture_result<Key>& result, std::size_t budget) {
    left_out_ = result.left_out;
    if (!result.left_out.empty()) {
      result.stopped_by = family_stop::byte_budget;
      if (result.captured.empty() && result.failures.empty()) {
        throw_budget_too_small(budget, result.left_out.back());
      }
    }
  }

  std::optional<byte_ladder> ladder_; // during a capture_all() under a byte_budget
  std::vector<family_left_out<Key>> left_out_;
  int device_ = -1; // where the first key was captured
  bool released_ = false;
  std::size_t given_back_ = 0;   // bytes the driver gave back at release_executables(give_back)
  std::size_t stream_bytes_ = 0; // what the capture stream took at its creation (kept by clear())
};

} // namespace graphcap::detail::families
