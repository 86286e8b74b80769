// graphcap/inspection/detail/dot_writer.hpp - a graph as Graphviz DOT, walked node by node: kernel
// nodes named by their demangled kernels, memsets and copies by their sizes, annotation scopes as
// nested clusters, conditional bodies as clusters next to their node (graph_layout supplies the
// last two). Node statements come first, grouped by cluster; edges after them, so that no edge
// pulls a node out of its cluster.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/graph_layout.hpp>
#include <graphcap/cuda/detail/graph_queries.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>
#include <graphcap/cuda/node_type.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphcap::detail::inspection {

/// `text` inside a DOT double-quoted string.
template <class = void>
std::string dot_escaped(std::string_view text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '\n') {
      escaped += "\\n"; // a line break in the label
      continue;
    }
    if (c == '"' || c == '\\') {
      escaped += '\\';
    }
    escaped += c;
  }
  return escaped;
}

/// Writes one graph (and the bodies of its conditional nodes) as DOT.
template <class = void>
class basic_dot_writer {
public:
  /// Writes to `out`; `layout` (may be null) gives scopes and bodies. Node ids and cluster
  /// names begin with `prefix`, so that several writers can draw into one document.
  basic_dot_writer(std::ostream& out, const graph_layout* layout, std::string prefix = "n")
      : out_(out), layout_(layout), names_(driver_if_available()), prefix_(std::move(prefix)) {
    if (layout_ == nullptr) {
      return;
    }
    for (std::size_t scope = 0; scope < layout_->scope_names.size(); ++scope) {
      for (const cudaGraphNode_t node : layout_->nodes_of(scope)) {
        scopes_of_[node].push_back(static_cast<std::uint32_t>(scope)); // inner scopes first
      }
    }
    parent_.assign(layout_->scope_names.size(), none);
    for (const auto& [node, chain] : scopes_of_) {
      for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        parent_[chain[i]] = chain[i + 1];
      }
    }
  }

  /// Gives each node the note `notes(node)` under its label, outlined where it has one.
  void set_notes(std::function<std::string(cudaGraphNode_t)> notes) { notes_ = std::move(notes); }

  /// The whole document for `graph`, titled `title`.
  void write(cudaGraph_t graph, std::string_view title) {
    write_header(out_, title);
    write_nodes(graph, "  ");
    write_edges("  ");
    out_ << "}\n";
  }

  /// A document's opening lines, up to its first node.
  static void write_header(std::ostream& out, std::string_view title) {
    out << "digraph graphcap {\n"
        << "  graph [compound=true, fontname=\"Helvetica\", label=\"" << dot_escaped(title)
        << "\", labelloc=t];\n"
        << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
           "fontname=\"Helvetica\"];\n";
  }
  /// The node statements of `graph` (its scopes and bodies as clusters); its edges are kept for
  /// write_edges(). One graph per writer: its first and last node (in CUDA's order) are first()
  /// and last().
  void write_nodes(cudaGraph_t graph, const std::string& indent) {
    write_level(graph, none, indent);
  }
  /// The edges of what write_nodes() drew (after every node statement: an edge that comes
  /// first would pull its nodes out of their clusters).
  void write_edges(const std::string& indent) {
    for (const std::string& edge : edges_) {
      out_ << indent << edge << ";\n";
    }
    edges_.clear();
  }
  /// The id of the first top-level node drawn ("" if none).
  [[nodiscard]] const std::string& first() const noexcept { return first_; }
  /// The id of the last top-level node drawn ("" if none).
  [[nodiscard]] const std::string& last() const noexcept { return last_; }

private:
  static constexpr std::uint32_t none = 0xFFFFFFFFU;

  /// The nodes of `graph`, in CUDA's order, grouped by their scopes inside `base` (the scope
  /// drawn around the graph already: a body's conditional node's); its edges into edges_.
  void write_level(cudaGraph_t graph, std::uint32_t base, const std::string& indent) {
    std::size_t count = 0;
    check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
    std::vector<cudaGraphNode_t> nodes(count);
    if (count != 0) {
      check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
    }
    for (const cudaGraphNode_t node : nodes) {
      std::string id = std::to_string(ids_.size());
      id.insert(0, prefix_); // not prefix + string: g++ 12 -O3 warns (-Wrestrict, a false alarm)
      ids_.emplace(node, std::move(id));
    }
    if (first_.empty() && !nodes.empty()) { // the graph's own level: named before any body's
      first_ = ids_.at(nodes.front());
      last_ = ids_.at(nodes.back());
    }
    write_scope(nodes, base, indent, true);
    collect_edges(graph);
  }

  /// The nodes of `nodes` whose innermost scope is `scope` (at the `top` of a graph: also those
  /// outside it), then the clusters of the scopes directly inside it that hold any of `nodes`.
  void write_scope(const std::vector<cudaGraphNode_t>& nodes, std::uint32_t scope,
                   const std::string& indent, bool top) {
    std::vector<std::uint32_t> children;
    for (const cudaGraphNode_t node : nodes) {
      const auto found = scopes_of_.find(node);
      const std::uint32_t innermost = found == scopes_of_.end() ? none : found->second.front();
      // The scope just inside `scope` on the way to this node's innermost one, if any.
      std::uint32_t child = none;
      for (std::uint32_t s = innermost; s != none && s != scope; s = parent_[s]) {
        if (parent_[s] == scope) {
          child = s;
          break;
        }
      }
      if (child != none) {
        if (std::find(children.begin(), children.end(), child) == children.end()) {
          children.push_back(child);
        }
      } else if (innermost == scope || top) {
        write_node(node, scope, indent);
      }
    }
    for (const std::uint32_t child : children) {
      out_ << indent << "subgraph cluster_" << prefix_ << clusters_++ << " {\n"
           << indent << "  label=\"" << dot_escaped(layout_->scope_names[child])
           << "\"; style=\"rounded,filled\"; fillcolor=\"#eef3fb\"; color=\"#4a6fa5\";\n";
      write_scope(nodes, child, indent + "  ", false);
      out_ << indent << "}\n";
    }
  }

  /// One node statement; a conditional node's bodies follow it as clusters.
  void write_node(cudaGraphNode_t node, std::uint32_t scope, const std::string& indent) {
    const cudaGraphNodeType type = node_type_of(node);
    const std::string& id = ids_.at(node);
    const graph_layout::conditional* conditional = conditional_of(node, type);
    std::string text =
        conditional != nullptr ? "conditional\n" + conditional->construct : label(node, type);
    const std::string note = notes_ ? notes_(node) : std::string{};
    if (!note.empty()) {
      text += "\n" + note;
    }
    out_ << indent << id << " [label=\"" << dot_escaped(text) << "\"" << shape(type)
         << (note.empty() ? "" : ", color=\"#b03060\", penwidth=2") << "];\n";
    if (conditional != nullptr) {
      for (std::size_t i = 0; i < conditional->bodies.size(); ++i) {
        const std::size_t cluster = clusters_++;
        const std::size_t first_id = ids_.size();
        out_ << indent << "subgraph cluster_" << prefix_ << cluster << " {\n"
             << indent << "  label=\"" << conditional->construct << " body"
             << (conditional->bodies.size() > 1 ? " " : "")
             << (conditional->bodies.size() > 1 ? std::to_string(i) : std::string{})
             << "\"; style=dashed; color=\"#a05a2c\";\n";
        write_level(conditional->bodies[i], scope, indent + "  ");
        std::string target = std::to_string(first_id);
        target.insert(0, prefix_);     // see write_level
        if (ids_.size() == first_id) { // an empty body: a point to draw the edge to
          target = id + "_body" + std::to_string(i);
          out_ << indent << "  " << target << " [label=\"(empty)\", shape=plaintext];\n";
        }
        out_ << indent << "}\n";
        std::string edge = id;
        edge += " -> ";
        edge += target;
        edge += " [lhead=cluster_";
        edge += prefix_;
        edge += std::to_string(cluster);
        edge += ", style=dashed, color=\"#a05a2c\"]";
        edges_.push_back(std::move(edge));
      }
    }
  }

  /// What control flow recorded of conditional node `node` (null: not one, or not recorded).
  [[nodiscard]] const graph_layout::conditional* conditional_of(cudaGraphNode_t node,
                                                                cudaGraphNodeType type) const {
    if (type != cudaGraphNodeTypeConditional || layout_ == nullptr) {
      return nullptr;
    }
    for (const graph_layout::conditional& conditional : layout_->conditionals) {
      if (conditional.node == node) {
        return &conditional;
      }
    }
    return nullptr;
  }

  /// The graph's edges, "a -> b" (edge data fetched too: CUDA refuses a lossy query).
  void collect_edges(cudaGraph_t graph) {
    std::size_t count = 0;
    check(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count), "cudaGraphGetEdges");
    if (count == 0) {
      return;
    }
    std::vector<cudaGraphNode_t> from(count);
    std::vector<cudaGraphNode_t> to(count);
    std::vector<cudaGraphEdgeData> data(count);
    check(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count),
          "cudaGraphGetEdges");
    for (std::size_t i = 0; i < count; ++i) {
      std::string edge = ids_.at(from[i]) + " -> " + ids_.at(to[i]);
      if (data[i].type == cudaGraphDependencyTypeProgrammatic) {
        edge += " [style=dotted, label=\"programmatic\"]";
      }
      edges_.push_back(std::move(edge));
    }
  }

  std::string label(cudaGraphNode_t node, cudaGraphNodeType type) {
    if (type == cudaGraphNodeTypeKernel) {
      const std::string_view name = names_.of(node);
      return name.empty() ? std::string{"kernel"} : std::string{name};
    }
    std::string text{to_string(type)};
    if (type == cudaGraphNodeTypeMemset) {
      cudaMemsetParams params{};
      check(cudaGraphMemsetNodeGetParams(node, &params), "cudaGraphMemsetNodeGetParams");
      text += "\n" + std::to_string(params.width * params.elementSize * params.height) +
              " bytes = " + std::to_string(params.value);
    } else if (type == cudaGraphNodeTypeMemcpy) {
      cudaMemcpy3DParms params{};
      check(cudaGraphMemcpyNodeGetParams(node, &params), "cudaGraphMemcpyNodeGetParams");
      text += "\n" +
              std::to_string(params.extent.width * std::max<std::size_t>(params.extent.height, 1) *
                             std::max<std::size_t>(params.extent.depth, 1)) +
              " bytes";
    }
    return text;
  }

  static const char* shape(cudaGraphNodeType type) {
    switch (type) {
    case cudaGraphNodeTypeKernel:
      return ", fillcolor=\"#dbe9d4\"";
    case cudaGraphNodeTypeMemset:
    case cudaGraphNodeTypeMemcpy:
      return ", fillcolor=\"#fbeed0\"";
    case cudaGraphNodeTypeConditional:
      return ", shape=diamond, style=filled, fillcolor=\"#f6d7c3\"";
    case cudaGraphNodeTypeEmpty:
      return ", shape=circle, style=solid, label=\"\", width=0.15";
    default:
      return "";
    }
  }

  std::ostream& out_;
  const graph_layout* layout_;
  kernel_names names_;
  std::map<cudaGraphNode_t, std::vector<std::uint32_t>> scopes_of_; // by closing position
  std::vector<std::uint32_t> parent_;                               // of each scope, or none
  std::map<cudaGraphNode_t, std::string> ids_;
  std::vector<std::string> edges_;
  std::size_t clusters_ = 0;
  std::string prefix_;                                // of node ids and cluster names
  std::function<std::string(cudaGraphNode_t)> notes_; // a line more for some nodes
  std::string first_; // the first and last node of the graph's own level
  std::string last_;
};
using dot_writer = basic_dot_writer<>;

} // namespace graphcap::detail::inspection
