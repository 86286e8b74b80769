// graphcap/annotations/detail/scopes.hpp - the scopes of one annotated capture as annot::on keeps
// them: each mark()'s key/values, where its nodes begin and end, and the order scopes closed in.
//
// Ranges index flat vectors that keep their capacity across scopes and captures, so that opening
// and closing a scope reuses memory once they have grown. What still allocates: a key or value
// longer than std::string's inline buffer (15 characters in libstdc++) is copied to the heap,
// and a capture with more scopes or pairs than any before grows the vectors.
#pragma once

#include <graphcap/annotations/values.hpp>
#include <graphcap/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::annotations {

/// One mark(): its key/values, what the graph looked like at entry (graph_walk), then the nodes
/// it tagged.
struct scope_record {
  std::uint32_t entries_begin = 0; ///< the first key/value, in capture_scopes::entries
  std::uint32_t entries_end = 0;   ///< past the last key/value
  /// graph_walk: the first node of the stream's frontier at entry, in the walk's boundary nodes
  std::uint32_t frontier_begin = 0;
  std::uint32_t frontier_end = 0; ///< past the frontier's last node
  /// [frontier_end, known_end): the frontier's dependents, or the graph's roots when the frontier
  /// was empty, at entry (graph_walk)
  std::uint32_t known_end = 0;
  /// The scope's first node: in the walk's tagged nodes (graph_walk, set at exit) or the creation
  /// log (creation_callbacks, set at entry).
  std::uint32_t nodes_begin = 0;
  std::uint32_t nodes_end = 0; ///< past the scope's last node, set at exit
  bool open = true;            ///< not closed yet
};

/// The scopes of the capture in progress.
template <class = void>
struct basic_capture_scopes {
  std::vector<scope_record> records;                        ///< every scope opened, in order
  std::vector<std::pair<std::string, std::string>> entries; ///< every scope's key/values
  std::vector<std::uint32_t> closed; ///< indices of records, in the order the scopes closed

  /// Adds a scope with `record`'s ranges and the key/values `pairs`; returns its index. Throws
  /// std::bad_alloc (having added nothing that a merge would read).
  std::uint32_t open(scope_record record, std::span<const annotation_entry> pairs) {
    record.entries_begin = static_cast<std::uint32_t>(entries.size());
    for (const annotation_entry& pair : pairs) {
      entries.emplace_back(pair.first, pair.second);
    }
    record.entries_end = static_cast<std::uint32_t>(entries.size());
    records.push_back(record);
    return static_cast<std::uint32_t>(records.size() - 1);
  }

  /// The closed scope at `position` (of closed).
  [[nodiscard]] const scope_record& closed_at(std::uint32_t position) const noexcept {
    return records[closed[position]];
  }

  /// Whether the closed scopes at `a` and `b` (positions of closed) gave the same key/values.
  [[nodiscard]] bool same_entries(std::uint32_t a, std::uint32_t b) const noexcept {
    const scope_record& first = closed_at(a);
    const scope_record& second = closed_at(b);
    return std::equal(entries.begin() + first.entries_begin, entries.begin() + first.entries_end,
                      entries.begin() + second.entries_begin, entries.begin() + second.entries_end);
  }

  /// The key/values of the closed scopes at `positions` (of closed), in that order.
  [[nodiscard]] std::vector<annotation_values::value_type>
  entries_of(std::span<const std::uint32_t> positions) const {
    std::vector<annotation_values::value_type> pairs;
    for (const std::uint32_t position : positions) {
      const scope_record& record = closed_at(position);
      for (std::uint32_t e = record.entries_begin; e < record.entries_end; ++e) {
        pairs.push_back(entries[e]);
      }
    }
    return pairs;
  }

  /// Forgets every scope; keeps the vectors' capacity.
  void clear() noexcept {
    records.clear();
    entries.clear();
    closed.clear();
  }
};
using capture_scopes = basic_capture_scopes<>;

/// What capture diagnostics call a scope (<graphcap/diagnostics.hpp>): its "name", else its first
/// key=value.
template <class = void>
std::string scope_label(std::span<const annotation_entry> entries) {
  for (const annotation_entry& entry : entries) {
    if (entry.first == "name") {
      return std::string{entry.second};
    }
  }
  return entries.empty() ? std::string{}
                         : std::string{entries[0].first} + "=" + std::string{entries[0].second};
}

} // namespace graphcap::detail::annotations
