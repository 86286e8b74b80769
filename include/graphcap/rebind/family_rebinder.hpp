// graphcap/rebind/family_rebinder.hpp - graphcap::rebinder of a graph_family: the same inputs,
// named once, in every key's graph (a basic_graph or a piecewise_graph), patched lazily: a
// rebind() records the moves, and a key's graph is patched when it is next replayed through the
// rebinder (<graphcap/rebind.hpp>; docs/rebinding.md, "Piecewise graphs and families").
//
//   graphcap::graph_family<std::size_t, step_graph> family;
//   family.capture_all(buckets, stream, work);
//   graphcap::rebinder inputs{family, {tokens, logits}};           // every key holds both
//   inputs.rebind({{tokens, next_tokens}, {logits, next_logits}}); // recorded: no patch yet
//   inputs.replay_at_least(batch, stream);                          // that key patched, replayed
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/stream_ref.hpp>
#include <graphcap/error.hpp>
#include <graphcap/rebind/detail/refusals.hpp>
#include <graphcap/rebind/detail/sites.hpp>
#include <graphcap/rebind/rebind_error.hpp>
#include <graphcap/rebind/rebinder.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

template <class Key, class Graph>
class graph_family;

namespace detail::rebind {

template <class Key>
[[nodiscard]] std::string family_key_text(const Key& key) {
  if constexpr (std::is_integral_v<Key>) {
    return std::to_string(key);
  } else {
    static_cast<void>(key);
    return "(a key)";
  }
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_one_executable() {
  throw state_error("graphcap::rebinder: a graph_family in one-executable mode hands one "
                    "executable between keys, and the rebinder patches each key's own; make the "
                    "family without family_options::one_executable to rebind it");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_family_stale(const char* what, const std::string& key) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what + ": key " + key +
                    " of the family is not a graph the rebinder scanned (captured on demand, "
                    "evicted or cleared since). Call rescan() after the family's keys change");
}

} // namespace detail::rebind

/// The rebinder of a graph_family: the inputs are named once (their addresses at the capture,
/// the same buffers in every key's work) and every captured key's graph must hold each of them.
/// rebind() checks the moves and records them; the replayed key's graph is patched at
/// replay_at_least() (or sync()), the others when they are next replayed: a step costs one key's
/// patches, however many keys the family holds. sync_all() patches every key at once. Keys
/// captured on demand, evicted or cleared need rescan(). Refers to the family: it must not
/// outlive it. docs/rebinding.md.
template <class Key, class Graph>
class rebinder<graph_family<Key, Graph>> {
public:
  using family_type = graph_family<Key, Graph>; ///< the family it patches

  /// Scans every captured key's graph for the `inputs`. \throws rebind_error, naming the key, for
  /// an input a key's graph does not hold and what its scan refuses; state_error for a family in
  /// one-executable mode or with no key, or graphs that keep no template.
  rebinder(family_type& family, std::span<const rebind_input> inputs,
           template_patch when = template_patch::at_once)
      : family_(&family), when_(when) {
    if (family.options().one_executable) {
      detail::rebind::throw_one_executable();
    }
    std::vector<detail::rebind::bound_input> registered;
    for (const rebind_input& input : inputs) {
      detail::rebind::register_input(registered, reinterpret_cast<std::uintptr_t>(input.address),
                                     input.bytes, rebind_input::to_allocation_end);
    }
    scan(std::move(registered));
  }
  /// As above, for a braced list: `rebinder binder{family, {a, b, {c, bytes}}}`.
  rebinder(family_type& family, std::initializer_list<rebind_input> inputs,
           template_patch when = template_patch::at_once)
      : rebinder(family, std::span<const rebind_input>{inputs.begin(), inputs.size()}, when) {}
  rebinder(const rebinder&) = delete;
  rebinder& operator=(const rebinder&) = delete;
  /// Takes `other`'s inputs and keys; `other` is left moved from (every call refuses).
  rebinder(rebinder&&) noexcept = default;
  /// As the move constructor; what this rebinder held is dropped.
  rebinder& operator=(rebinder&&) noexcept = default;
  ~rebinder() = default;

  /// Moves the input at `from` to `to` (whose size is asked from CUDA), for every key.
  /// \throws as rebind(moves).
  void rebind(const void* from, const void* to) {
    const rebinding one{from, to};
    rebind(std::span<const rebinding>{&one, 1});
  }
  /// Moves the input at `from` to `to`, a buffer of `to_bytes` bytes (no driver query).
  /// \throws as rebind(moves).
  void rebind(const void* from, const void* to, std::size_t to_bytes) {
    const rebinding one{from, to, to_bytes};
    rebind(std::span<const rebinding>{&one, 1});
  }
  /// Moves several inputs in one call. \throws as rebind(moves).
  void rebind(std::initializer_list<rebinding> moves) {
    rebind(std::span<const rebinding>{moves.begin(), moves.size()});
  }
  /// As above, for a span: the moves are checked (rebind_error, nothing recorded) and recorded;
  /// no graph is patched until its key is replayed through the rebinder, or sync()ed.
  /// \throws rebind_error (not an input, a null or too small target), state_error (moved from).
  /// \post on a throw nothing is recorded: the inputs keep their addresses.
  void rebind(std::span<const rebinding> moves) {
    require_ready("rebind");
    detail::rebind::resolve_moves(moves, inputs_, no_nodes_, which_, rebinding::unknown_size);
    for (std::size_t i = 0; i < moves.size(); ++i) {
      inputs_[which_[i]].address = reinterpret_cast<std::uintptr_t>(moves[i].to);
    }
    ++stamp_;
  }

  /// Patches the graph of the smallest key at least `n` to the inputs' current addresses
  /// (unless it is up to date), then replays it through the family (family.replay_at_least) and
  /// returns the key. \throws state_error for a key the rebinder did not scan (above the keys it
  /// knows: capture it through the family, then rescan()); what a patch throws, before the
  /// replay (the key's graph is then as before); what family.replay_at_least throws.
  /// A family of piecewise_graph<Segment, Context> takes the islands' context after the stream.
  template <class... Context>
  Key replay_at_least(const Key& n, stream_ref stream, Context&&... ctx) {
    require_ready("replay_at_least");
    const auto key = family_->find_at_least(n);
    if (!key) [[unlikely]] {
      detail::rebind::throw_family_stale("replay_at_least",
                                         ">= " + detail::rebind::family_key_text(n));
    }
    bring_up_to_date(entry_of(*key, "replay_at_least"));
    return family_->replay_at_least(n, stream, std::forward<Context>(ctx)...);
  }
  /// Patches the graph of `key` to the inputs' current addresses (for a replay that does not
  /// go through the rebinder: family.find(key)->replay(...)). \throws state_error for a key it
  /// did not scan; what a patch throws (rebinder::rebind(moves)), the key's graph then as before.
  void sync(const Key& key) {
    require_ready("sync");
    bring_up_to_date(entry_of(key, "sync"));
  }
  /// Patches every key's graph to the inputs' current addresses. \throws as sync(key); the keys
  /// patched before a throw stay patched.
  void sync_all() {
    require_ready("sync_all");
    for (key_binder& each : keys_) {
      bring_up_to_date(each);
    }
  }
  /// Whether `key`'s graph still holds addresses an earlier rebind() moved (patched at its
  /// next replay through the rebinder).
  [[nodiscard]] bool pending(const Key& key) const {
    for (const key_binder& each : keys_) {
      if (!(each.key < key) && !(key < each.key)) {
        return each.stamp != stamp_;
      }
    }
    return false;
  }

  /// Scans the family again (its keys now: after a capture on demand, evict() or clear() and
  /// capture_all()), for the inputs at their current addresses; the keys still held are
  /// brought up to date first. \throws state_error, rebind_error (an input a key does not hold),
  /// cuda_error. \post on a throw the rebinder is as it was (keys brought up to date stay so).
  void rescan() {
    require_ready("rescan");
    for (key_binder& each : keys_) {
      if (family_->find(each.key) == each.graph) {
        bring_up_to_date(each);
      }
    }
    std::vector<detail::rebind::bound_input> registered;
    for (const detail::rebind::bound_input& input : inputs_) {
      registered.push_back({input.address, input.bytes, {}});
    }
    scan(std::move(registered));
  }

  /// Registered inputs.
  [[nodiscard]] std::size_t input_count() const noexcept { return inputs_.size(); }
  /// Whether `address` is a registered input's current address.
  [[nodiscard]] bool is_input(const void* address) const noexcept {
    const auto wanted = reinterpret_cast<std::uintptr_t>(address);
    for (const detail::rebind::bound_input& input : inputs_) {
      if (input.address == wanted) {
        return true;
      }
    }
    return false;
  }
  /// The keys the rebinder scanned.
  [[nodiscard]] std::size_t key_count() const noexcept { return keys_.size(); }

private:
  struct key_binder {
    Key key;
    Graph* graph = nullptr;
    rebinder<Graph> binder;
    std::vector<std::uintptr_t> held; // the address of each input the key's graph holds now
    std::uint64_t stamp = 0;          // the rebind() it is up to date with
  };

  void require_ready(const char* what) const {
    if (!family_) [[unlikely]] {
      detail::rebind::throw_moved_from(what);
    }
  }

  key_binder& entry_of(const Key& key, const char* what) {
    for (key_binder& each : keys_) {
      if (!(each.key < key) && !(key < each.key)) {
        if (family_->find(key) != each.graph) [[unlikely]] {
          break;
        }
        return each;
      }
    }
    detail::rebind::throw_family_stale(what, detail::rebind::family_key_text(key));
  }

  void bring_up_to_date(key_binder& entry) {
    if (entry.stamp == stamp_) {
      return;
    }
    moves_.clear();
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (entry.held[i] != inputs_[i].address) {
        moves_.push_back({detail::rebind::as_pointer(entry.held[i]),
                          detail::rebind::as_pointer(inputs_[i].address), inputs_[i].bytes});
      }
    }
    if (!moves_.empty()) {
      entry.binder.rebind(std::span<const rebinding>{moves_});
    }
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      entry.held[i] = inputs_[i].address;
    }
    entry.stamp = stamp_;
  }

  void scan(std::vector<detail::rebind::bound_input> registered) {
    std::vector<rebind_input> asked;
    std::vector<std::uintptr_t> held;
    asked.reserve(registered.size());
    held.reserve(registered.size());
    for (const detail::rebind::bound_input& input : registered) {
      asked.emplace_back(detail::rebind::as_pointer(input.address), input.bytes);
      held.push_back(input.address);
    }
    if (family_->keys().empty()) [[unlikely]] {
      throw state_error("graphcap::rebinder: the graph_family has no captured key; construct "
                        "the rebinder after capture_all()");
    }
    std::vector<key_binder> found;
    for (const Key& key : family_->keys()) {
      Graph* const graph = family_->find(key);
      try {
        found.push_back({key, graph,
                         rebinder<Graph>{*graph, std::span<const rebind_input>{asked}, when_}, held,
                         0});
      } catch (const rebind_error& refused) {
        throw rebind_error("graphcap::rebinder of a graph_family: key " +
                           detail::rebind::family_key_text(key) + ": " + refused.what());
      }
    }
    inputs_ = std::move(registered); // taken once nothing can fail
    keys_ = std::move(found);
    stamp_ = 0;
  }

  detail::rebind::graph_link<family_type> family_; // null once moved from
  template_patch when_ = template_patch::at_once;
  std::uint64_t stamp_ = 0;                              // rebind() calls since the scan
  std::vector<detail::rebind::bound_input> inputs_;      // at their current addresses
  std::vector<key_binder> keys_;                         // in the family's order, smallest first
  std::vector<detail::rebind::patchable_node> no_nodes_; // resolve_moves' nodes: none here
  // Scratch, kept to spare the allocations.
  std::vector<std::size_t> which_;
  std::vector<rebinding> moves_;
};

} // namespace graphcap
