// graphcap/rebind/node_switch.hpp - nodes of an executable turned off and on without recapture,
// through cudaGraphNodeSetEnabled (<graphcap/rebind.hpp>).
//
//   graphcap::node_tag debug_dump;
//   step.capture(stream, [&](auto& cap) {
//     forward(cap.stream());
//     debug_dump = graphcap::tag_nodes(step, cap.stream(), [&](cudaStream_t s) { dump(s); });
//   });
//   graphcap::set_enabled(step, debug_dump, false); // the dump's nodes do nothing at replays
//   graphcap::set_enabled(step, "attention", false); // a scope's nodes (annot::on)
//
// CUDA turns off kernel, memset and memcpy nodes only; a tag or scope holding any other node is
// refused, naming it, before anything changes. See docs/rebinding.md.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/rebind/detail/switches.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphcap {

/// The nodes some work added to a capture, taken with tag_nodes(): what set_enabled() turns on
/// and off. Belongs to one capture of one graph: stale after the graph's next capture.
template <class = void>
class basic_node_tag {
public:
  /// No nodes, of no capture.
  basic_node_tag() = default;
  /// What tag_nodes() makes: `nodes` of the capture of `graph` that ends as generation
  /// `generation` (the graph object's address identifies it).
  basic_node_tag(const void* graph, std::uint16_t generation, std::vector<cudaGraphNode_t> nodes)
      : graph_(graph), generation_(generation), nodes_(std::move(nodes)) {}

  /// The tagged nodes (the template's handles).
  [[nodiscard]] std::span<const cudaGraphNode_t> nodes() const noexcept { return nodes_; }
  /// How many nodes the work added.
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  /// Whether the tag belongs to `graph`'s current capture.
  template <class Graph>
  [[nodiscard]] bool belongs_to(const Graph& graph) const noexcept {
    return graph_ == static_cast<const void*>(&graph) && generation_ == graph.generation();
  }

private:
  const void* graph_ = nullptr;
  std::uint16_t generation_ = 0;
  std::vector<cudaGraphNode_t> nodes_;
};
/// What to name: basic_node_tag<> (a template only so that its bodies compile where used).
using node_tag = basic_node_tag<>;

/// Runs `work(stream)` inside the capture of `graph` that `stream` belongs to (its main stream or
/// a conditional body's), and tags the nodes it added. Throws state_error when `stream` is not
/// capturing.
template <class Graph, class Work>
[[nodiscard]] node_tag tag_nodes(const Graph& graph, stream_ref stream, Work&& work) {
  const std::vector<cudaGraphNode_t> before = detail::rebind::capture_nodes(stream.get()).second;
  std::forward<Work>(work)(stream.get());
  std::vector<cudaGraphNode_t> added =
      detail::rebind::added_nodes(before, detail::rebind::capture_nodes(stream.get()).second);
  return node_tag{&graph, static_cast<std::uint16_t>(graph.generation() + 1), std::move(added)};
}

/// Turns the tagged nodes off (their work is skipped at replays) or on again, in the graph's
/// executable; the template is not changed. Where a recapture updated the executable in place,
/// it is first instantiated anew from the template (CUDA names an executable's nodes only by the
/// graph it was instantiated from), which turns every node on again. Throws state_error for a graph
/// not instantiated, or a tag of another graph or an earlier capture; rebind_error, naming the node
/// type, for a node CUDA cannot turn off. Nothing changes on an error.
template <class Graph>
void set_enabled(Graph& graph, const node_tag& tag, bool enabled) {
  if (!tag.belongs_to(graph)) [[unlikely]] {
    detail::rebind::throw_foreign_tag();
  }
  detail::rebind::set_nodes_enabled(graph, tag.nodes(), enabled, "the tag");
}

/// Turns the nodes of every annotation scope named `scope` off or on (annot::on records each
/// scope's nodes; a nested scope's nodes are its parents' too). Throws rebind_error for a name no
/// scope of the last capture has.
template <class Graph>
void set_enabled(Graph& graph, std::string_view scope, bool enabled) {
  using annot = typename Graph::annot_type;
  static_assert(annotation_with_layout<annot>,
                "graphcap::set_enabled(graph, \"scope\", on): the graph's annotations record no "
                "scope's nodes; use annot::on (graph_with<annot::on, ...>), or tag the nodes "
                "with graphcap::tag_nodes during the capture");
  const std::vector<cudaGraphNode_t> nodes =
      detail::rebind::scope_nodes(graph.annot_policy().layout(), scope);
  detail::rebind::set_nodes_enabled(graph, nodes, enabled, "scope '" + std::string{scope} + "'");
}

/// Whether every tagged node is on in the graph's executable.
template <class Graph>
[[nodiscard]] bool is_enabled(const Graph& graph, const node_tag& tag) {
  if (!tag.belongs_to(graph)) [[unlikely]] {
    detail::rebind::throw_foreign_tag();
  }
  return detail::rebind::all_enabled(detail::rebind::executable_of(graph), tag.nodes());
}

} // namespace graphcap
