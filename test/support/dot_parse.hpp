// test/support/dot_parse.hpp - a DOT document as graphcap::write_dot writes it, read back into
// nodes (label, enclosing clusters), edges and cluster counts, for the tests of <graphcap/dot.hpp>.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gctest {

/// What a DOT document says, read back: each node's label and the clusters around it (outermost
/// first), and the edges as pairs of labels.
struct parsed_dot {
  std::map<std::string, std::string> label_of;              // node id -> label
  std::map<std::string, std::vector<std::string>> clusters; // node id -> cluster labels
  std::vector<std::pair<std::string, std::string>> edges;   // node ids
  std::vector<std::string> edge_attributes;
  std::size_t cluster_count = 0;
  bool closed = false; // the digraph's closing brace was seen, with every cluster closed

  /// The id of the one node labelled `label` ("" if none or several).
  [[nodiscard]] std::string id_of(const std::string& label) const {
    std::string found;
    for (const auto& [id, text] : label_of) {
      if (text == label) {
        if (!found.empty()) {
          return {};
        }
        found = id;
      }
    }
    return found;
  }
  /// The id of the one node whose label contains `part` ("" if none or several).
  [[nodiscard]] std::string id_containing(const std::string& part) const {
    std::string found;
    for (const auto& [id, text] : label_of) {
      if (text.find(part) != std::string::npos) {
        if (!found.empty()) {
          return {};
        }
        found = id;
      }
    }
    return found;
  }
  /// Whether an edge joins the nodes with ids `from` and `to`.
  [[nodiscard]] bool has_edge_between(const std::string& from, const std::string& to) const {
    return std::find(edges.begin(), edges.end(), std::pair{from, to}) != edges.end();
  }
  /// Whether an edge joins the nodes labelled `from` and `to`.
  [[nodiscard]] bool has_edge(const std::string& from, const std::string& to) const {
    return std::find(edges.begin(), edges.end(), std::pair{id_of(from), id_of(to)}) != edges.end();
  }
  [[nodiscard]] std::vector<std::string> clusters_of(const std::string& label) const {
    const auto found = clusters.find(id_of(label));
    return found == clusters.end() ? std::vector<std::string>{} : found->second;
  }
};

inline std::string unescaped(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      out += text[i + 1] == 'n' ? '\n' : text[i + 1];
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

inline parsed_dot parse(const std::string& dot) {
  static const std::regex cluster_open{R"re(^\s*subgraph (cluster_\w+) \{$)re"};
  static const std::regex cluster_label{R"re(^\s*label="((?:[^"\\]|\\.)*)";.*$)re"};
  static const std::regex node{R"re(^\s*(\w+) \[label="((?:[^"\\]|\\.)*)".*\];$)re"};
  static const std::regex edge{R"re(^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$)re"};
  parsed_dot parsed;
  std::vector<std::string> open; // labels of the clusters open at this line
  bool in_digraph = false;
  bool expect_label = false;
  std::istringstream lines{dot};
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (line == "digraph graphcap {") {
      in_digraph = true;
    } else if (!in_digraph) {
      continue;
    } else if (std::regex_match(line, match, cluster_open)) {
      open.emplace_back();
      ++parsed.cluster_count;
      expect_label = true;
    } else if (expect_label && std::regex_match(line, match, cluster_label)) {
      open.back() = unescaped(match[1]);
      expect_label = false;
    } else if (std::regex_match(line, match, edge)) {
      parsed.edges.emplace_back(match[1], match[2]);
      parsed.edge_attributes.push_back(match[3]);
    } else if (std::regex_match(line, match, node)) {
      std::string label = unescaped(match[2]);
      if (line.find("label=\"\"", static_cast<std::size_t>(match.position(2))) !=
          std::string::npos) {
        label = "(empty node)"; // a join drawn as a dot: its label is overridden
      }
      parsed.label_of[match[1]] = label;
      parsed.clusters[match[1]] = open;
    } else if (line.find_first_not_of(' ') != std::string::npos &&
               line.substr(line.find_first_not_of(' ')) == "}") {
      if (open.empty()) {
        parsed.closed = true;
        in_digraph = false;
      } else {
        open.pop_back();
      }
    }
  }
  return parsed;
}

} // namespace gctest
