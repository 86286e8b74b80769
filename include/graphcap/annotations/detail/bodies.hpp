// graphcap/annotations/detail/bodies.hpp - annotations of the nodes of conditional bodies
// (<graphcap/control_flow.hpp>): the scopes opened inside a body, and the scopes of the parent
// around the conditional, both tag the body's nodes.
//
// A body is captured into its own graph (its own capture id), which neither CUPTI's creation log
// nor the walk of the parent graph sees. Its scopes are kept apart: a scope opened in a body
// records how many nodes the body graph holds when it opens and when it closes, and since
// cudaGraphGetNodes lists a graph's nodes in creation order, it tags the nodes of that range
// (work forked to other streams inside the body included: it captures into the same graph).
//
// The rule for the parent's scopes: a scope that tags a conditional node tags every node of its
// bodies too, recursively (a body runs as part of its node). A body node's values are its own
// body's scopes (innermost first), then those of the scopes that tagged its conditional node: the
// inner scope's value of a key wins, as everywhere else. Body nodes are listed after the graph's
// own, body after body in the order they were captured; each gets the template id CUPTI gives it
// (cuptiGetGraphNodeId, one call per body node: its body graph's id and its index there).
//
// The id a body node's replays carry in CUPTI's kernel records: the executable numbers the
// graph's own nodes first, then the bodies' nodes, body after body (inferred from the H200's
// records: annotations/detail/ids.hpp, executable_node_index). annotate records every body's
// graph id and node count for it; the graph's own count comes once the capture has ended.
#pragma once

#include <graphcap/annotations/detail/merge.hpp>
#include <graphcap/annotations/detail/scopes.hpp>
#include <graphcap/annotations/values.hpp>
#include <graphcap/cuda/detail/cupti.hpp>
#include <graphcap/cuda/detail/graph_queries.hpp>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphcap::detail::annotations {

/// The bodies of one annotated capture and the scopes opened in them.
template <class = void>
class basic_body_annotations {
public:
  /// Marks a scope index as one of a body's (the marker keeps one index for either kind).
  static constexpr std::uint32_t body_scope_bit = 0x80000000U;

  /// `body`, a body graph of `conditional`, is being captured on `stream`. Throws std::bad_alloc.
  void add(const graph_queries& queries, cudaGraphNode_t conditional, cudaGraph_t body,
           cudaStream_t stream) {
    // Id 0 (CUDA refused): scopes opened on this body's streams tag nothing.
    bodies_.push_back({conditional, body, stream, queries.active_capture_id(stream)});
  }

  /// Opens a scope on `stream` if it captures into one of the bodies (its index, with
  /// body_scope_bit); nothing if not. Throws std::bad_alloc.
  std::optional<std::uint32_t> open(const graph_queries& queries, cudaStream_t stream,
                                    std::span<const annotation_entry> entries) {
    const body* found = body_of(queries, stream);
    std::size_t count = 0;
    if (found == nullptr || !queries.nodes(found->graph, nullptr, count)) {
      return std::nullopt;
    }
    scope_record record;
    record.nodes_begin = static_cast<std::uint32_t>(count);
    const std::uint32_t index = scopes_.open(record, entries);
    graph_of_scope_.push_back(found->graph);
    return index | body_scope_bit;
  }

  /// Closes the body scope `index` (with body_scope_bit); never throws (it then tags nothing).
  void close(const graph_queries& queries, std::uint32_t index) noexcept {
    index &= ~body_scope_bit;
    if (index >= scopes_.records.size() || !scopes_.records[index].open) {
      return;
    }
    scope_record& record = scopes_.records[index];
    record.open = false;
    std::size_t count = 0;
    if (!queries.nodes(graph_of_scope_[index], nullptr, count)) {
      return;
    }
    record.nodes_end = static_cast<std::uint32_t>(count);
    try {
      scopes_.closed.push_back(index);
    } catch (...) { // out of memory: this scope tags nothing
    }
  }

  /// Closes the scopes still open, innermost first (the capture ends).
  void close_all(const graph_queries& queries) noexcept {
    for (std::size_t i = scopes_.records.size(); i-- > 0;) {
      close(queries, static_cast<std::uint32_t>(i));
    }
  }

  /// Appends to `nodes` an annotation per tagged body node (see the header's comment), with the
  /// template id CUPTI gives it (0 from other sources), and tells `nodes` the id of `graph`, the
  /// captured graph. Call while the capture runs, after the graph's own nodes were merged.
  /// Throws std::bad_alloc.
  void annotate(node_id_source source, const graph_queries& queries, cudaGraph_t graph,
                annotated_nodes& nodes) {
    nodes.graph_id = 0;
    nodes.own_nodes = 0;
    nodes.bodies.clear();
    if (bodies_.empty()) {
      return;
    }
    if (source == node_id_source::cupti &&
        cuptiGetGraphId(graph, &nodes.graph_id) != CUPTI_SUCCESS) {
      source = node_id_source::none; // no graph id: the body nodes could not be told apart
      nodes.graph_id = 0;
    }
    if (source == node_id_source::cupti) {
      record_body_sizes(queries, nodes);
    }
    if (source != node_id_source::cupti) {
      source = node_id_source::none; // the rule for body nodes is CUPTI's (see rekey_to_executable)
    }
    std::unordered_map<cudaGraphNode_t, std::size_t> annotated; // node -> its annotation
    for (std::size_t i = 0; i < nodes.nodes.size(); ++i) {
      annotated.emplace(nodes.nodes[i], i);
    }
    std::vector<cudaGraphNode_t> listed;
    std::vector<annotation_values::value_type> pairs;
    for (const body& b : bodies_) { // a nested body comes after the body holding its node
      const auto outer = annotated.find(b.conditional);
      const annotation_values inherited =
          outer != annotated.end() ? nodes.annotations[outer->second].values : annotation_values{};
      std::size_t count = 0;
      if (!queries.nodes(b.graph, nullptr, count)) {
        continue;
      }
      listed.resize(count);
      if (!queries.nodes(b.graph, listed.data(), count)) {
        continue;
      }
      listed.resize(count);
      for (std::uint32_t position = 0; position < listed.size(); ++position) {
        pairs.clear();
        for (const std::uint32_t index : scopes_.closed) { // in closing order: innermost first
          const scope_record& record = scopes_.records[index];
          if (graph_of_scope_[index] == b.graph && position >= record.nodes_begin &&
              position < record.nodes_end) {
            pairs.insert(pairs.end(), scopes_.entries.begin() + record.entries_begin,
                         scopes_.entries.begin() + record.entries_end);
          }
        }
        if (pairs.empty() && inherited.empty()) {
          continue;
        }
        node_annotation& node = nodes.annotations.emplace_back();
        if (pairs.empty()) {
          node.values = inherited; // shared, as within a scope
        } else {
          pairs.insert(pairs.end(), inherited.begin(), inherited.end());
          node.values = annotation_values{pairs};
        }
        CUptiResult cupti = CUPTI_SUCCESS;
        node.template_id = template_node_id(source, listed[position], cupti);
        node.id = node.template_id; // until an executable exists
        nodes.nodes.push_back(listed[position]);
        annotated.emplace(listed[position], nodes.nodes.size() - 1);
      }
    }
  }

  /// Forgets the capture's bodies and scopes; keeps the capacity.
  void clear() noexcept {
    bodies_.clear();
    scopes_.clear();
    graph_of_scope_.clear();
  }

private:
  /// Every body's CUPTI graph id and node count, in capture order, into `nodes.bodies`; none if
  /// one is unknown (the body nodes' replayed ids then stay 0: executable_node_index).
  void record_body_sizes(const graph_queries& queries, annotated_nodes& nodes) {
    for (const body& b : bodies_) {
      std::uint32_t id = 0;
      std::size_t count = 0;
      if (cuptiGetGraphId(b.graph, &id) != CUPTI_SUCCESS ||
          !queries.nodes(b.graph, nullptr, count)) {
        nodes.bodies.clear();
        return;
      }
      nodes.bodies.emplace_back(id, static_cast<std::uint32_t>(count));
    }
  }

  struct body {
    cudaGraphNode_t conditional = nullptr;
    cudaGraph_t graph = nullptr;
    cudaStream_t stream = nullptr;  // the stream graphcap captures it on
    unsigned long long capture = 0; // its capture's id: streams forked inside it share it
  };

  const body* body_of(const graph_queries& queries, cudaStream_t stream) const noexcept {
    for (auto b = bodies_.rbegin(); b != bodies_.rend(); ++b) { // the latest: handles recur
      if (b->stream == stream && b->capture != 0) {
        return &*b;
      }
    }
    const unsigned long long id = bodies_.empty() ? 0 : queries.active_capture_id(stream);
    if (id == 0) {
      return nullptr;
    }
    for (const body& b : bodies_) {
      if (b.capture == id) {
        return &b;
      }
    }
    return nullptr;
  }

  std::vector<body> bodies_;
  capture_scopes scopes_;                   // the scopes opened in bodies
  std::vector<cudaGraph_t> graph_of_scope_; // the body graph of each of scopes_' records
};
using body_annotations = basic_body_annotations<>;

} // namespace graphcap::detail::annotations
