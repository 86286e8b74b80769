// graphcap/families/detail/switch_verify.hpp - family_options::verify_first_switch: a key's first
// switch to its group's executable checked by verify() (inspection/verify.hpp) before the key is
// trusted: the key's work run eagerly, its outputs copied and poisoned, the executable replayed,
// the outputs compared byte for byte.
#pragma once

#include <graphcap/core/update.hpp>
#include <graphcap/error.hpp>
#include <graphcap/families/detail/executable_groups.hpp>
#include <graphcap/families/detail/family_support.hpp>
#include <graphcap/families/family_types.hpp>
#include <graphcap/inspection/verify.hpp>
#include <graphcap/inspection/verify_report.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace graphcap::detail::families {

/// Whether `Graph` replays with a stream alone (a piecewise_graph<Graph, Context> needs its
/// context too).
template <class Graph>
constexpr bool replays_without_context() {
  if constexpr (requires { typename Graph::context_type; }) {
    return std::is_void_v<typename Graph::context_type>;
  } else {
    return true;
  }
}

/// Runs verify() on `graph` (the key's graph, holding its group's executable) against `eager`
/// for `key` on `stream`, comparing `options.verify_outputs(key)`. Returns the empty string when
/// the replay matched, else the report's text. graphcap::error when the family cannot verify (a
/// work taking the scope, no verify_outputs).
template <class Graph, class Key>
std::string verify_switch(Graph& graph, const Key& key, const family_options<Key>& options,
                          const std::function<void(const Key&, cudaStream_t)>& eager,
                          cudaStream_t stream) {
  if (!eager || !options.verify_outputs) {
    throw error(std::string{"graphcap: graph_family verify_first_switch runs the work eagerly and "
                            "compares what verify_outputs names: "} +
                (!eager ? "give capture_all() a work taking (key, cudaStream_t), not the scope"
                        : "set family_options::verify_outputs") +
                ", or leave verify_first_switch off");
  }
  const std::vector<family_output> outputs = options.verify_outputs(key);
  std::vector<graphcap::detail::verify_slot> slots;
  slots.reserve(outputs.size());
  for (const family_output& each : outputs) {
    slots.push_back(graphcap::detail::make_slot(
        graphcap::output(static_cast<unsigned char*>(each.data), each.bytes, each.name)));
  }
  if constexpr (replays_without_context<Graph>()) {
    verify_options settings;
    settings.stream = stream;
    const verify_report report = graphcap::detail::verify_slots(
        graph, [&](cudaStream_t on) { eager(key, on); }, settings, slots);
    return report.ok() ? std::string{} : report.text();
  } else {
    throw error("graphcap: graph_family verify_first_switch replays the key's graph as verify() "
                "does, without a context, which a piecewise_graph<Graph, Context> cannot: leave "
                "verify_first_switch off, or verify() each key yourself");
  }
}

/// The first switch of `key` (its `graph`, of group `group`, holding the group's executable now):
/// verify_switch(); a mismatch gives the key an executable of its own (executable_groups::
/// separate, entered in its statistics and the family's last update) and throws
/// family_verify_error naming the key.
template <class Groups, class Graph, class Key>
void check_first_switch(Groups& groups, Graph& graph, std::size_t& group,
                        family_key_statistics& counts, update_result& last, const Key& key,
                        const family_options<Key>& options,
                        const std::function<void(const Key&, cudaStream_t)>& eager,
                        cudaStream_t stream) {
  const std::string mismatch = verify_switch(graph, key, options, eager, stream);
  if (mismatch.empty()) {
    return;
  }
  groups
      .separate(graph, group,
                "verify_first_switch: its replay of its topology's executable differed from its "
                "work run eagerly")
      .record(counts, group, last);
  throw family_verify_error("graphcap: graph_family key " + key_text(key) +
                            ": its first switch to its group's executable replayed other values "
                            "than its work run eagerly (verify_first_switch); it has an "
                            "executable of its own now. " +
                            mismatch);
}

/// One-executable mode: `target` (a family's entry: its graph, group and statistics) takes its
/// group's executable unless it holds it, and a first switch is checked (verify_first_switch).
template <class Groups, class Entry, class Key>
void switch_and_check(Groups& groups, Entry& target, const Key& key,
                      const family_options<Key>& options,
                      const std::function<void(const Key&, cudaStream_t)>& eager,
                      cudaStream_t stream, update_result& last) {
  const group_switch done = groups.switch_to(*target.graph, target.group);
  done.record(target.statistics, target.group, last);
  if (done.switched && done.result.updated() && options.verify_first_switch &&
      !groups.verified(*target.graph, target.group)) [[unlikely]] {
    check_first_switch(groups, *target.graph, target.group, target.statistics, last, key, options,
                       eager, stream);
    groups.mark_verified(*target.graph, target.group);
  }
}

} // namespace graphcap::detail::families
