// graphcap/inspection/dot.hpp - a labelled picture of a captured graph, as Graphviz DOT.
//
//   #include <graphcap/dot.hpp>
//
//   graphcap::graph_with<graphcap::annot::on> graph{graphcap::keep_graph};
//   graph.capture(...);
//   graphcap::write_dot(graph, "graph.dot");      // dot -Tpng graph.dot -o graph.png
//
// debug_dump() hands the template to cudaGraphDebugDotPrint, whose nodes are addresses and
// parameter dumps. write_dot() walks the template itself: kernel nodes carry their demangled
// kernel names (through the driver; "kernel" where it cannot tell), memsets and copies their
// sizes, edges their dependencies (dotted: programmatic). With annot::on, nodes tagged by a
// mark() scope are drawn inside one cluster per scope, nested scopes nested, and conditional
// nodes (<graphcap/control_flow.hpp>) with their bodies as dashed clusters next to them: CUDA
// 13.0 cannot list a conditional node's bodies, so only a graph that recorded them at capture
// (annot::on does) draws them. Needs the template: construct the graph with keep_graph. A
// piecewise graph (<graphcap/piecewise.hpp>) is drawn as its segments with its islands between.
// The lean core never includes this header.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/cuda/detail/graph_layout.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/inspection/detail/dot_writer.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>

namespace graphcap {

/// How write_dot() draws.
struct dot_options {
  /// The picture's title ("" : "graphcap graph, N nodes").
  std::string title{};
  /// A note written under a node's label, the node outlined where it has one ("" or null:
  /// none). A rebinder's dot_notes() marks the nodes that hold its inputs and where.
  std::function<std::string(cudaGraphNode_t)> notes{};
};

namespace detail::inspection {

/// A graph drawn as segments with islands between them (graphcap::piecewise_graph): what
/// write_dot() needs of it, so that this wing does not include the piecewise one.
template <class Graph>
concept segmented = requires(const Graph& graph, std::size_t k) {
  { graph.segment_count() } -> std::same_as<std::size_t>;
  { graph.island_count() } -> std::same_as<std::size_t>;
  { graph.island_scope(k) } -> std::convertible_to<std::string>;
  graph.segment(k).raw_graph();
};

/// write_dot()'s refusals: a graph without its template, or not captured.
template <class Graph>
void require_drawable(const Graph& graph) {
  if (!graph.keeps_graph()) {
    throw state_error("graphcap: write_dot() needs the graph's template, which only a graph "
                      "kept with it offers: construct the graph with graphcap::keep_graph");
  }
  if (graph.state() != graph_state::captured && graph.state() != graph_state::instantiated) {
    std::string text{"graphcap: cannot write_dot() while the graph is "};
    text.append(to_string(graph.state()));
    throw state_error(text + ": capture first");
  }
}

/// The annotation layout of `graph` (null without one).
template <class Graph>
const graph_layout* layout_of(const Graph& graph) {
  if constexpr (annotation_with_layout<typename Graph::annot_type>) {
    return &graph.annot_policy().layout();
  } else {
    return nullptr;
  }
}

/// The document of a segmented graph titled `title`: each non-empty segment a cluster drawn by
/// its own dot_writer (ids prefixed "s<k>n"), each island a hexagon, bold edges chaining them
/// in replay order (an edge to or from a segment clipped at its cluster).
template <class Graph>
void write_segmented(const Graph& graph, std::ostream& out, const std::string& title,
                     const std::function<std::string(cudaGraphNode_t)>& notes) {
  dot_writer::write_header(out, title);
  std::string previous; // the last thing drawn: an island, or a segment's last node
  std::string previous_cluster;
  for (std::size_t k = 0; k < graph.segment_count(); ++k) {
    const auto& segment = graph.segment(k);
    const std::string cluster = "cluster_segment" + std::to_string(k);
    if (segment.node_count() != 0) {
      dot_writer writer{out, layout_of(segment), "s" + std::to_string(k) + "n"};
      writer.set_notes(notes);
      out << "  subgraph " << cluster << " {\n    label=\"segment " << k
          << "\"; style=dashed; color=\"#7a7a7a\";\n";
      writer.write_nodes(segment.raw_graph(), "    ");
      out << "  }\n";
      writer.write_edges("  ");
      if (!previous.empty()) { // an island before this segment
        out << "  " << previous << " -> " << writer.first() << " [lhead=" << cluster
            << ", style=bold];\n";
      }
      previous = writer.last();
      previous_cluster = cluster;
    }
    if (k < graph.island_count()) {
      const std::string island = "island" + std::to_string(k);
      const std::string scope{graph.island_scope(k)};
      out << "  " << island << " [label=\"island " << k << (scope.empty() ? "" : "\\n")
          << dot_escaped(scope) << "\", shape=hexagon, style=filled, fillcolor=\"#eadcf2\"];\n";
      if (!previous.empty()) {
        out << "  " << previous << " -> " << island << " ["
            << (previous_cluster.empty() ? "" : "ltail=" + previous_cluster + ", ")
            << "style=bold];\n";
      }
      previous = island;
      previous_cluster.clear();
    }
  }
  out << "}\n";
}

} // namespace detail::inspection

/// Writes `graph`'s template as DOT to `out`: one labelled node per graph node (its type, kernel
/// name and annotations, and options.notes' note), conditional bodies as clusters, dependencies
/// as edges. Throws
/// state_error without a template (keep_graph), cuda_error if CUDA refuses a query.
template <class Graph>
requires(!detail::inspection::segmented<Graph>) void write_dot(const Graph& graph,
                                                               std::ostream& out,
                                                               const dot_options& options = {}) {
  detail::inspection::require_drawable(graph);
  std::string title = options.title;
  if (title.empty()) {
    title = "graphcap graph, " + std::to_string(graph.node_count()) + " nodes";
  }
  detail::inspection::dot_writer writer{out, detail::inspection::layout_of(graph)};
  writer.set_notes(options.notes);
  writer.write(graph.raw_graph(), title);
}

/// Writes a piecewise graph (<graphcap/piecewise.hpp>) as DOT: each non-empty segment a dashed
/// cluster ("segment k") drawn as write_dot() draws a graph, each island a hexagon between the
/// segments it sits between, labelled with its index and the mark() scopes around it. The
/// segments need their templates: construct the piecewise graph with graphcap::keep_graph.
template <class Graph>
requires detail::inspection::segmented<Graph>
void write_dot(const Graph& graph, std::ostream& out, const dot_options& options = {}) {
  detail::inspection::require_drawable(graph);
  std::string title = options.title;
  if (title.empty()) {
    title = "graphcap piecewise graph, " + std::to_string(graph.segment_count()) + " segments, " +
            std::to_string(graph.island_count()) + " islands, " +
            std::to_string(graph.node_count()) + " nodes";
  }
  detail::inspection::write_segmented(graph, out, title, options.notes);
}

/// Writes the DOT to the file `path` (replaced). Throws graphcap::error if it cannot be written.
template <class Graph>
void write_dot(const Graph& graph, const std::string& path, const dot_options& options = {}) {
  std::ostringstream text; // all of it first: a failed query leaves no half-written file
  write_dot(graph, text, options);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text.str();
  file.close();
  if (!file) {
    throw error("graphcap: write_dot() could not write '" + path +
                "': check that its directory exists and is writable");
  }
}

/// The DOT of `graph` as a string.
template <class Graph>
[[nodiscard]] std::string dot_text(const Graph& graph, const dot_options& options = {}) {
  std::ostringstream text;
  write_dot(graph, text, options);
  return text.str();
}

} // namespace graphcap
