// graphcap/families/detail/executable_groups.hpp - graph_family's one-executable mode: the keys'
// kept templates grouped by topology, one executable graph per group, handed from key to key by
// cudaGraphExecUpdate (basic_graph::take_executable) instead of a recapture.
//
// A key joins the first group of its topology signature (families/detail/topology.hpp) whose
// executable CUDA updates to its template; the join is that update, so a switch later is an
// update CUDA already accepted once. A key no group takes (another topology, or an update CUDA
// refused) starts a group: its own instantiation. The executable lives in the graph of the key
// that was switched to last (the group's holder); the others keep their templates only.
#pragma once

#include <graphcap/core/update.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/families/detail/topology.hpp>
#include <graphcap/families/family_types.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::families {

/// Instantiates `graph` (a kept template) and returns how many bytes of device memory the
/// device's free memory dropped by meanwhile (cudaMemGetInfo: other allocations at the same time
/// count too, and CUDA may draw on memory it reserved before, so it is a measure, not a bound).
template <class Graph>
std::size_t instantiate_measured(Graph& graph) {
  std::size_t free_before = 0;
  std::size_t free_after = 0;
  std::size_t total = 0;
  check(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo");
  graph.instantiate();
  check(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
  return free_before > free_after ? free_before - free_after : 0;
}

/// What a key's switch (or its join at capture) did, for its statistics.
struct group_switch {
  bool switched = false;     ///< the key did not hold its group's executable before
  update_result result{};    ///< updated, or instantiated (a group of its own, or none held)
  std::size_t group = 0;     ///< the key's group after the switch
  std::size_t new_bytes = 0; ///< device bytes an instantiation took (0 for an update)
  /// Why a group of the key's topology could not take it (empty: none existed, or one did)
  std::string apart;
  /// The first key of its topology founded its group: the group's own instantiation, which is
  /// neither a switch nor a fallback.
  bool founded = false;

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
      }
    }
  }
};

/// The groups of one family in one-executable mode.
template <class Graph>
class executable_groups {
public:
  /// Enters `graph` (captured with keep_graph, not instantiated): it joins the first group of
  /// its signature whose executable CUDA updates to it (and holds that executable now), or
  /// starts a group of its own (instantiated).
  group_switch join(Graph& graph) {
    const topology_signature signature = signature_of(graph.raw_graph());
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
      update_result result = graph.take_executable(*candidate.holder);
      if (result.updated()) {
        candidate.holder = &graph;
        return {true, result, g, 0, {}};
      }
      refused = result;
    }
    group_switch own = start_group(graph, signature);
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

  /// Makes `graph`, a member of group `g`, hold its group's executable: an update from its
  /// template; an instantiation where the group holds none (its holder was evicted) or where
  /// CUDA refuses (then `graph` starts a group of its own).
  group_switch switch_to(Graph& graph, std::size_t g) {
    group& current = groups_[g];
    if (current.holder == &graph) {
      return {
          false, {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess}, g, 0, {}};
    }
    if (current.holder == nullptr) {
      current.device_bytes = instantiate_measured(graph);
      current.holder = &graph;
      return {true,
              {update_outcome::instantiated, cudaGraphExecUpdateSuccess,
               "its group held no executable graph (the key that held it was evicted)",
               cudaSuccess},
              g,
              current.device_bytes,
              {}};
    }
    update_result result = graph.take_executable(*current.holder);
    if (result.updated()) {
      current.holder = &graph;
      return {true, result, g, 0, {}};
    }
    group_switch own = start_group(graph, current.signature);
    own.result = {update_outcome::reinstantiated, result.cuda_result, result.reason, result.error};
    own.apart = std::string{"CUDA refused the update from its topology's executable: "} +
                std::string{result.reason};
    own.founded = false; // a fallback: it was to take its group's executable
    return own;
  }

  /// `graph` (of group `g`) goes: if it held the group's executable, the group holds none now.
  void leave(const Graph& graph, std::size_t g) noexcept {
    if (groups_[g].holder == &graph) {
      groups_[g].holder = nullptr;
      groups_[g].device_bytes = 0;
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
  struct group {
    topology_signature signature;
    Graph* holder = nullptr;      // the graph that holds the executable; null: none
    std::size_t device_bytes = 0; // measured at its instantiation
  };

  group_switch start_group(Graph& graph, const topology_signature& signature) {
    groups_.reserve(groups_.size() + 1); // the push below cannot throw after instantiating
    const std::size_t bytes = instantiate_measured(graph);
    groups_.push_back({signature, &graph, bytes});
    return {true,
            {update_outcome::instantiated, cudaGraphExecUpdateSuccess,
             "no group of its topology took it: an executable graph of its own", cudaSuccess},
            groups_.size() - 1,
            bytes,
            {},
            true};
  }

  std::vector<group> groups_;
};

} // namespace graphcap::detail::families
