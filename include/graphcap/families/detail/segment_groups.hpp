// graphcap/families/detail/segment_groups.hpp - one-executable mode for a family of segmented
// graphs (piecewise graphs: graph segments with eager islands between them): segment k of every
// key joins the executable groups of position k (families/detail/executable_groups.hpp), so a
// segment of one topology across keys shares one executable, switched as a plain family's key
// is (set-params on the nodes that differ, else cudaGraphExecUpdate, else an instantiation).
//
// Segments of one key are never grouped with each other: they run one after the other in every
// step, and sharing one executable between them would switch it several times per step. A key's
// group is the tuple of its segments' groups (a "composite"): two keys whose segments share
// every executable have the same composite. A segment with no node (an island first, last or two
// in a row) is never launched and joins no group. This wing does not include the piecewise one:
// graph_family, which the piecewise graph befriends, hands the segments over at the join.
#pragma once

#include <graphcap/core/update.hpp>
#include <graphcap/families/detail/executable_groups.hpp>
#include <graphcap/families/detail/family_support.hpp>
#include <graphcap/families/family_types.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::families {

/// Whether `Graph` is made of segments of a graph type that can share executables (a
/// piecewise_graph of basic_graphs): what one-executable mode groups segment by segment.
template <class Graph>
concept segmented_graph = requires {
  typename Graph::segment_type;
}
&&shares_executables<typename Graph::segment_type>;

/// The executable groups of a family of segmented graphs, position by position.
template <class Graph>
class segment_groups {
public:
  using segment = typename Graph::segment_type; ///< the graph of one segment

  /// Enters `graph` (captured with keep_graph, not instantiated), whose segments are
  /// `segments` (the piecewise graph's own, in order): each non-empty segment joins a group of its
  /// position (or starts one). If a join throws, the segments joined before it leave their groups
  /// again.
  template <class Owned> // std::unique_ptr<segment>
  group_switch join(const Graph& graph, const std::vector<Owned>& segments) {
    members_.reserve(members_.size() + 1); // no throw after the joins
    composites_.reserve(composites_.size() + 1);
    member fresh{&graph, {}, {}, false};
    for (const Owned& each : segments) {
      fresh.segments.push_back(each.get());
    }
    if (positions_.size() < fresh.segments.size()) {
      positions_.resize(fresh.segments.size());
    }
    fresh.groups.assign(fresh.segments.size(), none);
    std::vector<group_switch> joins;
    try {
      for (std::size_t k = 0; k < fresh.segments.size(); ++k) {
        if (fresh.segments[k]->node_count() == 0) {
          continue; // never launched: no executable to share
        }
        group_switch done = positions_[k].join(*fresh.segments[k]);
        fresh.groups[k] = done.group;
        joins.push_back(std::move(done));
      }
    } catch (...) {
      leave_all(fresh);
      throw;
    }
    group_switch all = combine(joins, fresh.groups);
    all.group = composite_of(fresh.groups);
    members_.push_back(std::move(fresh));
    return all;
  }

  /// Makes every non-empty segment of `graph` hold its group's executable (executable_groups::
  /// switch_to, position by position); the key's composite after the switch in `.group`. A key
  /// that holds them all already (the key replayed last: every replay asks) costs a scan of the
  /// keys and of its segments' states, no allocation.
  group_switch switch_to(const Graph& graph, std::size_t composite) {
    member& target = find(graph);
    if (holds_all(target)) {
      return {false,
              {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess},
              composite,
              0,
              {}};
    }
    std::vector<group_switch> switches;
    for (std::size_t k = 0; k < target.segments.size(); ++k) {
      if (target.groups[k] != none) {
        group_switch done = positions_[k].switch_to(*target.segments[k], target.groups[k]);
        target.groups[k] = done.group;
        switches.push_back(std::move(done));
      }
    }
    group_switch all = combine(switches, target.groups);
    all.group = composite_of(target.groups);
    return all;
  }

  /// Every segment of `graph` gets an executable of its own (executable_groups::separate):
  /// its replay of the shared ones could not be trusted (`why`).
  group_switch separate(const Graph& graph, std::size_t /*composite*/, const std::string& why) {
    member& target = find(graph);
    std::vector<group_switch> own;
    for (std::size_t k = 0; k < target.segments.size(); ++k) {
      if (target.groups[k] != none) {
        group_switch done = positions_[k].separate(*target.segments[k], target.groups[k], why);
        target.groups[k] = done.group;
        own.push_back(std::move(done));
      }
    }
    group_switch all = combine(own, target.groups);
    all.group = composite_of(target.groups);
    all.apart = why;
    all.founded = false;
    return all;
  }

  /// `graph` goes: each of its segments leaves its group (executable_groups::leave).
  void leave(const Graph& graph, std::size_t /*composite*/) noexcept {
    auto found = std::find_if(members_.begin(), members_.end(),
                              [&](const member& each) { return each.graph == &graph; });
    if (found != members_.end()) {
      leave_all(*found);
      members_.erase(found);
    }
  }

  /// Whether every non-empty segment of `graph` holds an executable (it replays without one).
  [[nodiscard]] bool holds(const Graph& graph) const noexcept {
    for (const member& each : members_) {
      if (each.graph == &graph) {
        return holds_all(each);
      }
    }
    return false;
  }

  /// Whether `graph`'s first switch was verified (verify_first_switch: the whole step at once).
  [[nodiscard]] bool verified(const Graph& graph, std::size_t /*composite*/) noexcept {
    return find(graph).verified;
  }
  /// Notes that `graph`'s first switch was verified.
  void mark_verified(const Graph& graph, std::size_t /*composite*/) noexcept {
    find(graph).verified = true;
  }

  /// Executable graphs held now, over every position.
  [[nodiscard]] std::size_t executables() const noexcept {
    std::size_t count = 0;
    for (const executable_groups<segment>& each : positions_) {
      count += each.executables();
    }
    return count;
  }
  /// The device bytes measured when the executables held now were instantiated.
  [[nodiscard]] std::size_t device_bytes() const noexcept {
    std::size_t bytes = 0;
    for (const executable_groups<segment>& each : positions_) {
      bytes += each.device_bytes();
    }
    return bytes;
  }
  /// Drops every group (the graphs, which hold the executables, are the family's to drop).
  void clear() noexcept {
    positions_.clear();
    members_.clear();
    composites_.clear();
  }

private:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max(); // joins no group

  struct member {
    const Graph* graph = nullptr;
    std::vector<segment*> segments;  // the key's segments, in order (at fixed addresses)
    std::vector<std::size_t> groups; // each segment's group at its position; none: empty
    bool verified = false;           // verify_first_switch checked its first switch
  };

  // Only called with a graph that joined: graph_family switches, verifies and separates the
  // keys it entered.
  member& find(const Graph& graph) noexcept {
    auto found = std::find_if(members_.begin(), members_.end(),
                              [&](const member& each) { return each.graph == &graph; });
    return *found;
  }

  // Whether every joined segment of `key` holds its group's executable (in a group, a segment
  // is instantiated exactly while it holds the group's executable: executable_groups.hpp).
  static bool holds_all(const member& key) noexcept {
    for (std::size_t k = 0; k < key.segments.size(); ++k) {
      if (key.groups[k] != none && key.segments[k]->state() != graph_state::instantiated) {
        return false;
      }
    }
    return true;
  }

  void leave_all(const member& gone) noexcept {
    for (std::size_t k = 0; k < gone.groups.size(); ++k) {
      if (gone.groups[k] != none) {
        positions_[k].leave(*gone.segments[k], gone.groups[k]);
      }
    }
  }

  // The id of a tuple of segment groups: keys of one id share every executable.
  std::size_t composite_of(const std::vector<std::size_t>& groups) {
    auto found = std::find(composites_.begin(), composites_.end(), groups);
    if (found != composites_.end()) {
      return static_cast<std::size_t>(found - composites_.begin());
    }
    composites_.push_back(groups);
    return composites_.size() - 1;
  }

  // What the segments' switches did, as one key's: switched if any was; founded where every
  // switched segment founded its group (a key of new topologies: no switch, no fallback); else
  // an update (patched where every other switched segment was patched) unless one of the others
  // instantiated; the bytes summed; the first reason a segment gave for an executable of its
  // own, with its position.
  static group_switch combine(const std::vector<group_switch>& parts,
                              const std::vector<std::size_t>& groups) {
    group_switch all;
    all.result = {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess};
    bool every_patched = true;
    bool any_switch = false; // a switched segment that did not found its group
    std::size_t part = 0;
    for (std::size_t k = 0; k < groups.size() && part < parts.size(); ++k) {
      if (groups[k] == none) {
        continue;
      }
      const group_switch& each = parts[part++];
      if (!each.switched) {
        continue;
      }
      if (!all.switched) {
        all.switched = true;
        if (each.founded) {
          all.result = each.result; // instantiated, unless a later segment switches
        }
      }
      all.new_bytes += each.new_bytes;
      if (!each.founded) {
        if (!any_switch) {
          all.result = {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess};
        }
        any_switch = true;
        every_patched = every_patched && each.patched;
        if (!each.result.updated() && all.result.updated()) {
          all.result = each.result;
        }
      }
      if (all.apart.empty() && !each.apart.empty()) {
        all.apart = "segment " + std::to_string(k) + ": " + each.apart;
      }
    }
    all.founded = all.switched && !any_switch;
    all.patched = any_switch && every_patched;
    return all;
  }

  std::vector<executable_groups<segment>> positions_; // position k: the k-th segments' groups
  std::vector<member> members_;                       // every key entered, by its graph
  std::vector<std::vector<std::size_t>> composites_;  // each composite's segment groups
};

/// Executable graphs of a family's `entries` in the default mode: one per key, one per segment
/// of a segmented key.
template <class Entries>
[[nodiscard]] std::size_t executables_of(const Entries& entries) noexcept {
  std::size_t count = 0;
  for (const auto& each : entries) {
    if constexpr (requires { each->graph->segment_count(); }) {
      count += each->graph->segment_count();
    } else {
      count += 1;
    }
  }
  return count;
}

/// The groups of a family of `Graph`s in one-executable mode: by position for segmented graphs,
/// else by key.
template <class Graph>
struct groups_of {
  using type = executable_groups<Graph>; ///< a key's graph shares one executable
};
/// A segmented graph's segments share executables position by position.
template <segmented_graph Graph>
struct groups_of<Graph> {
  using type = segment_groups<Graph>; ///< segment k shares with the other keys' segment k
};
/// groups_of<Graph>'s type.
template <class Graph>
using groups_for = typename groups_of<Graph>::type;

} // namespace graphcap::detail::families
