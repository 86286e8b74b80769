// graphcap/families/detail/executable_groups.hpp - graph_family's one-executable mode: the keys'
// kept templates grouped by topology, one executable graph per group, handed from key to key by
// setting the nodes whose parameters differ (families/detail/node_patch.hpp), or by
// cudaGraphExecUpdate (basic_graph::take_executable) where set-params cannot, instead of a
// recapture.
//
// A key joins the first group of its topology signature (families/detail/topology.hpp) whose
// executable CUDA updates to its template; the join is that update, so a switch later is an
// update CUDA already accepted once. A key no group takes (another topology, or an update CUDA
// refused) starts a group: its own instantiation. The executable lives in the graph of the key
// that was switched to last (the group's holder); the others keep their templates only. Each
// member's node parameters are read once, at its join; the handles of the template the
// executable was instantiated from are kept for the set-params (if that key is evicted while
// another holds the executable, the group switches by update until it instantiates again).
#pragma once

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/executable_cache.hpp>
#include <graphcap/families/detail/node_patch.hpp>
#include <graphcap/families/detail/topology.hpp>
#include <graphcap/families/family_types.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::families {

/// Instantiates `graph` (a kept template) and returns how many bytes of device memory the
/// device's free memory dropped by meanwhile (cudaMemGetInfo: other allocations at the same time
/// count too, and CUDA may draw on memory it reserved before, so it is a measure, not a bound).
template <class Graph>
std::size_t instantiate_measured(Graph& graph) {
  const std::size_t free_before = device_free_bytes();
  graph.instantiate();
  const std::size_t free_after = device_free_bytes();
  return free_before > free_after ? free_before - free_after : 0;
}

/// What a key's switch (or its join at capture) did, for its statistics.
template <class = void>
struct basic_group_switch {
  bool switched = false;     ///< the key did not hold its group's executable before
  update_result result{};    ///< updated, or instantiated (a group of its own, or none held)
  std::size_t group = 0;     ///< the key's group after the switch
  std::size_t new_bytes = 0; ///< device bytes an instantiation took (0 for an update)
  /// Why a group of the key's topology could not take it (empty: none existed, or one did)
  std::string apart;
  /// The first key of its topology founded its group: the group's own instantiation, which is
  /// neither a switch nor a fallback.
  bool founded = false;
  bool patched = false; ///< switched by set-params on the nodes that differ (no update)

  /// Enters the switch in a key's statistics, its group and the family's last update: a switch
  /// is an update or, where none could be made (CUDA refused it, the launches differ, the group
  /// held no executable), a fallback to an instantiation.
  void record(family_key_statistics& counts, std::size_t& key_group, update_result& last) const {
    key_group = group;
    if (!apart.empty()) {
      counts.own_executable = apart;
    }
    if (switched) {
      last = result;
      counts.executable_bytes += new_bytes;
      if (!founded) {
        ++counts.switches;
        ++(result.updated() ? counts.updates : counts.fallbacks);
        counts.patches += patched ? 1 : 0;
      }
    }
  }
};
using group_switch = basic_group_switch<>;

/// Whether a switch may hand `Graph`'s executable on as it is, having set its nodes itself.
template <class Graph>
concept takes_matched_executable = requires(Graph& graph, policy_key key) {
  graphcap::detail::policy_access::take_matched_executable(graph, graph, key);
};

/// The groups of one family in one-executable mode.
template <class Graph>
class executable_groups : core_extension {
public:
  /// Enters `graph` (captured with keep_graph, not instantiated): it joins the first group of
  /// its signature whose executable CUDA updates to it (and holds that executable now), or
  /// starts a group of its own (instantiated). Its node parameters are read first: a failed
  /// read changes nothing.
  group_switch join(Graph& graph) {
    const topology_signature signature = signature_of(graph.raw_graph());
    key_params params = read_params(graph);
    update_result refused{};
    std::string apart; // why a group of its topology whose launches differ cannot take it
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      group& candidate = groups_[g];
      if (!candidate.signature.same_topology(signature) || candidate.holder == nullptr) {
        continue;
      }
      if (candidate.signature.launches != signature.launches) {
        // CUDA would update it and keep the executable's launches (another cluster shape):
        // never shared.
        if (apart.empty()) {
          apart = launch_difference(graph.raw_graph(), candidate.holder->raw_graph());
        }
        continue;
      }
      candidate.members.reserve(candidate.members.size() + 1); // no throw after the update
      if (!candidate.members.empty()) { // against the base's parameters, if it is still first
        const key_params& base = candidate.members.front().params;
        if (base.base == candidate.base && base.differs.empty()) {
          note_differences(params, base, candidate.base);
        }
      }
      update_result result = graph.take_executable(*candidate.holder);
      if (result.updated()) {
        candidate.holder = &graph;
        candidate.members.push_back({&graph, std::move(params)});
        return {true, result, g, 0, {}};
      }
      refused = result;
    }
    group_switch own = start_group(graph, signature, std::move(params));
    if (refused.outcome == update_outcome::refused) { // a group of its topology refused it
      own.result = {update_outcome::reinstantiated, refused.cuda_result, refused.reason,
                    refused.error};
      own.apart = std::string{"CUDA refused the update from its topology's executable: "} +
                  std::string{refused.reason};
    } else {
      own.apart = std::move(apart);
    }
    own.founded = own.apart.empty(); // else a fallback: a group of its topology existed
    return own;
  }

  /// Makes `graph`, a member of group `g`, hold its group's executable: set-params on the nodes
  /// whose parameters differ from the holder's (node_patch.hpp), else an update from its
  /// template; an instantiation where the group holds none (its holder was evicted) or where
  /// CUDA refuses (then `graph` starts a group of its own).
  group_switch switch_to(Graph& graph, std::size_t g) {
    group& current = groups_[g];
    if (current.holder == &graph) {
      return {
          false, {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess}, g, 0, {}};
    }
    if (current.holder == nullptr) {
      std::vector<cudaGraphNode_t> nodes = nodes_of(graph.raw_graph());
      current.device_bytes = instantiate_measured(graph);
      current.holder = &graph;
      current.instantiated_from = &graph;
      current.nodes = std::move(nodes);
      return {true,
              {update_outcome::instantiated, cudaGraphExecUpdateSuccess,
               "its group held no executable graph (the key that held it was evicted)",
               cudaSuccess},
              g,
              current.device_bytes,
              {}};
    }
    const patch_outcome patch = try_patch(current, graph);
    if (patch.patched) {
      return {true, {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess},
              g,    0,
              {},   false,
              true};
    }
    update_result result = graph.take_executable(*current.holder);
    if (result.updated()) {
      current.holder = &graph;
      return {true, result, g, 0, {}};
    }
    if (patch.nodes_set > 0) { // the holder's executable was set in part: back to its template
      cudaGraphExecUpdateResultInfo info{};
      check(cudaGraphExecUpdate(current.holder->raw_exec(), current.holder->raw_graph(), &info),
            "cudaGraphExecUpdate (graph_family: undoing a patch before a fallback)");
    }
    key_params params = take_params(current, graph);
    group_switch own = start_group(graph, current.signature, std::move(params));
    own.result = {update_outcome::reinstantiated, result.cuda_result, result.reason, result.error};
    own.apart = std::string{"CUDA refused the update from its topology's executable: "} +
                std::string{result.reason};
    own.founded = false; // a fallback: it was to take its group's executable
    return own;
  }

  /// `graph`, which holds group `g`'s executable, gets an executable of its own (instantiated
  /// from its template; the group's is destroyed with it, and the group holds none): its replay
  /// of the shared one could not be trusted (`why`).
  group_switch separate(Graph& graph, std::size_t g, std::string why) {
    const topology_signature signature = groups_[g].signature;
    key_params params = take_params(groups_[g], graph);
    leave(graph, g);
    group_switch own = start_group(graph, signature, std::move(params));
    own.result.outcome = update_outcome::reinstantiated;
    own.apart = std::move(why);
    own.founded = false;
    return own;
  }

  /// `graph` (of group `g`) goes: if it held the group's executable, the group holds none now;
  /// if the executable was instantiated from its template, no set-params can reach the
  /// executable's nodes any more (updates only, until the group instantiates again).
  void leave(const Graph& graph, std::size_t g) noexcept {
    group& from = groups_[g];
    if (from.holder == &graph) {
      from.holder = nullptr;
      from.device_bytes = 0;
    }
    if (from.instantiated_from == &graph) {
      from.instantiated_from = nullptr;
      from.nodes.clear();
    }
    std::erase_if(from.members, [&](const member& each) { return each.graph == &graph; });
  }

  /// Whether `graph` holds an executable now (its group's, or one of its own).
  [[nodiscard]] bool holds(const Graph& graph) const noexcept {
    return graph.state() == graph_state::instantiated;
  }

  /// Whether `graph`'s first switch in group `g` was verified (verify_first_switch).
  [[nodiscard]] bool verified(const Graph& graph, std::size_t g) noexcept {
    const member* found = find(groups_[g], &graph);
    return found != nullptr && found->verified;
  }
  /// Notes that `graph`'s first switch in group `g` was verified.
  void mark_verified(const Graph& graph, std::size_t g) noexcept {
    if (member* found = find(groups_[g], &graph)) {
      found->verified = true;
    }
  }

  /// Executable graphs held now (a group whose holder was evicted holds none).
  [[nodiscard]] std::size_t executables() const noexcept {
    std::size_t count = 0;
    for (const group& each : groups_) {
      count += each.holder != nullptr ? 1 : 0;
    }
    return count;
  }
  /// The device bytes measured when the executables held now were instantiated.
  [[nodiscard]] std::size_t device_bytes() const noexcept {
    std::size_t bytes = 0;
    for (const group& each : groups_) {
      bytes += each.device_bytes;
    }
    return bytes;
  }
  /// Drops every group (the graphs, which hold the executables, are the family's to drop).
  void clear() noexcept { groups_.clear(); }

private:
  static constexpr bool patches = takes_matched_executable<Graph>;

  struct member {
    const Graph* graph = nullptr;
    key_params params;     // its template's node parameters (none if it cannot be patched)
    bool verified = false; // verify_first_switch checked its first switch
  };
  struct group {
    topology_signature signature;
    Graph* holder = nullptr;                  // the graph that holds the executable; null: none
    std::size_t device_bytes = 0;             // measured at its instantiation
    const Graph* instantiated_from = nullptr; // whose template the executable was made from
    std::vector<cudaGraphNode_t> nodes;       // that template's nodes, for the set-params
    std::vector<member> members;
    std::uint64_t base = 0; // the id of its founder's parameters, which members list differences to
  };

  static key_params read_params(Graph& graph) {
    if constexpr (patches) {
      return read_key_params(nodes_of(graph.raw_graph()));
    } else {
      return {};
    }
  }

  static member* find(group& in, const Graph* graph) noexcept {
    for (member& each : in.members) {
      if (each.graph == graph) {
        return &each;
      }
    }
    return nullptr;
  }

  /// Sets the nodes of the group's executable that differ between its holder and `graph`, and
  /// hands it to `graph` (patched), or leaves the update to the caller (not patched).
  patch_outcome try_patch(group& current, Graph& graph) {
    if constexpr (patches) {
      const member* held = find(current, current.holder);
      const member* target = find(current, &graph);
      if (current.instantiated_from == nullptr || held == nullptr || target == nullptr) {
        return {};
      }
      const patch_outcome patch =
          patch_nodes(current.holder->raw_exec(), current.nodes, held->params, target->params);
      if (patch.patched) {
        graphcap::detail::policy_access::take_matched_executable(graph, *current.holder, key());
        current.holder = &graph;
      }
      return patch;
    } else {
      return {};
    }
  }

  /// `graph`'s parameters, out of its group (it is to start one of its own).
  static key_params take_params(group& from, const Graph& graph) {
    key_params params;
    if (member* found = find(from, &graph)) {
      params = std::move(found->params);
      std::erase_if(from.members, [&](const member& each) { return each.graph == &graph; });
    }
    return params;
  }

  group_switch start_group(Graph& graph, const topology_signature& signature, key_params params) {
    groups_.reserve(groups_.size() + 1); // the push below cannot throw after instantiating
    std::vector<member> members;
    members.reserve(1);
    std::vector<cudaGraphNode_t> nodes = nodes_of(graph.raw_graph());
    const std::size_t bytes = instantiate_measured(graph);
    params.differs.clear(); // the base of its group: differs from itself nowhere
    params.base = params.patchable ? next_base_++ : 0;
    const std::uint64_t base = params.base;
    members.push_back({&graph, std::move(params)});
    groups_.push_back(
        {signature, &graph, bytes, &graph, std::move(nodes), std::move(members), base});
    return {true,
            {update_outcome::instantiated, cudaGraphExecUpdateSuccess,
             "no group of its topology took it: an executable graph of its own", cudaSuccess},
            groups_.size() - 1,
            bytes,
            {},
            true};
  }

  std::vector<group> groups_;
  std::uint64_t next_base_ = 1; // the next group's base id
};

} // namespace graphcap::detail::families
