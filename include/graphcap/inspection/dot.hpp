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
// (annot::on does) draws them. Needs the template: construct the graph with keep_graph.
// The lean core never includes this header.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
#include <graphcap/cuda/detail/graph_layout.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/inspection/detail/dot_writer.hpp>

#include <cuda_runtime_api.h>

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

namespace graphcap {

/// How write_dot() draws.
struct dot_options {
  /// The picture's title ("" : "graphcap graph, N nodes").
  std::string title;
};

/// Writes `graph`'s template as DOT to `out`: one labelled node per graph node (its type, kernel
/// name and annotations), conditional bodies as clusters, dependencies as edges. Throws
/// state_error without a template (keep_graph), cuda_error if CUDA refuses a query.
template <class Graph>
void write_dot(const Graph& graph, std::ostream& out, const dot_options& options = {}) {
  if (!graph.keeps_graph()) {
    throw state_error("graphcap: write_dot() needs the graph's template, which CUDA drops after "
                      "instantiation: construct the graph with graphcap::keep_graph");
  }
  if (graph.state() != graph_state::captured && graph.state() != graph_state::instantiated) {
    std::string text{"graphcap: cannot write_dot() while the graph is "};
    text.append(to_string(graph.state()));
    throw state_error(text + ": capture first");
  }
  const cudaGraph_t raw = graph.raw_graph();
  const detail::graph_layout* layout = nullptr;
  if constexpr (annotation_with_layout<typename Graph::annot_type>) {
    layout = &graph.annot_policy().layout();
  }
  std::string title = options.title;
  if (title.empty()) {
    title = "graphcap graph, " + std::to_string(graph.node_count()) + " nodes";
  }
  detail::inspection::dot_writer{out, layout}.write(raw, title);
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
