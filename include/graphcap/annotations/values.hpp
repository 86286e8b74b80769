// graphcap/annotations/values.hpp - what an annotated node carries: annotation_values (the merged
// key/values of its scopes, shared by the nodes of a scope) and node_annotation (one annotated
// node: its ids, type, kernel name and values). Plain values: no CUDA call, no CUPTI.
#pragma once

#include <graphcap/config.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphcap {

/// The key/value pairs of an annotated node, sorted by key. Immutable and shared: the nodes of
/// one scope share one list, so that copying an annotation copies no strings.
template <class = void>
class basic_annotation_values {
public:
  /// One key and its value.
  using value_type = std::pair<std::string, std::string>;
  /// Iterates the pairs in key order.
  using const_iterator = std::vector<value_type>::const_iterator;

  /// No pairs.
  basic_annotation_values() noexcept = default;
  /// Pairs in any order; a key given twice keeps its first value.
  basic_annotation_values(std::initializer_list<value_type> pairs)
      : basic_annotation_values(std::vector<value_type>(pairs)) {}
  /// Pairs in any order; a key given twice keeps its first value.
  explicit basic_annotation_values(std::vector<value_type> pairs) {
    const auto by_key = [](const value_type& a, const value_type& b) { return a.first < b.first; };
    if (pairs.size() <= small_list) { // stable: a key's first value stays first; no buffer
      for (auto next = pairs.begin(); next != pairs.end(); ++next) {
        std::rotate(std::upper_bound(pairs.begin(), next, *next, by_key), next, next + 1);
      }
    } else {
      std::stable_sort(pairs.begin(), pairs.end(), by_key);
    }
    pairs.erase(
        std::unique(pairs.begin(), pairs.end(),
                    [](const value_type& a, const value_type& b) { return a.first == b.first; }),
        pairs.end());
    if (!pairs.empty()) {
      pairs_ = std::make_shared<const std::vector<value_type>>(std::move(pairs));
    }
  }

  /// The first pair (the smallest key).
  [[nodiscard]] const_iterator begin() const noexcept { return list().begin(); }
  /// Past the last pair.
  [[nodiscard]] const_iterator end() const noexcept { return list().end(); }
  /// How many keys.
  [[nodiscard]] std::size_t size() const noexcept { return list().size(); }
  /// True when no scope gave a key.
  [[nodiscard]] bool empty() const noexcept { return list().empty(); }

  /// The value of `key`, or "" if no scope gave it.
  [[nodiscard]] std::string_view value(std::string_view key) const noexcept {
    const auto place =
        std::lower_bound(begin(), end(), key, [](const value_type& item, std::string_view wanted) {
          return std::string_view{item.first} < wanted;
        });
    return place != end() && place->first == key ? std::string_view{place->second}
                                                 : std::string_view{};
  }

  /// The same pairs (a shared list compares equal without looking at its strings).
  friend bool operator==(const basic_annotation_values& a,
                         const basic_annotation_values& b) noexcept {
    return a.pairs_ == b.pairs_ || a.list() == b.list();
  }

private:
  static constexpr std::size_t small_list = 16;

  [[nodiscard]] const std::vector<value_type>& list() const noexcept {
    static const std::vector<value_type> none;
    return pairs_ ? *pairs_ : none;
  }

  std::shared_ptr<const std::vector<value_type>> pairs_;
};
/// What to name: basic_annotation_values<> (a template only so that its bodies compile where used).
using annotation_values = basic_annotation_values<>;

/// One annotated node of a captured graph. Cheap to copy: the kernel's name lives as long as the
/// process, the values are shared.
template <class = void>
struct basic_node_annotation {
  /// The id CUPTI's kernel activity records (and profilers) give this node when the graph is
  /// replayed: (executable graph id << 32 | node index) once instantiated, the template node's
  /// id before. 0 when no id source is available (docs/annotations.md, "Degraded").
  std::uint64_t id = 0;
  /// The captured (template) node's id; stays the same when the graph is instantiated again.
  std::uint64_t template_id = 0;
  /// The node's type; cudaGraphNodeTypeCount if the runtime could not tell (batch mem-op nodes).
  cudaGraphNodeType type = cudaGraphNodeTypeCount;
  /// The kernel's (demangled) name, for kernel nodes: kept by graphcap for the life of the
  /// process (one copy per distinct kernel), so the view never dangles.
  std::string_view kernel;
  /// The merged key/values of every scope around the node, inner scopes winning, sorted by key.
  annotation_values values;

  /// The value of `key`, or "" if no scope gave it.
  [[nodiscard]] std::string_view value(std::string_view key) const noexcept {
    return values.value(key);
  }
  /// The region's name (the "name" key): what mark("attention") gives.
  [[nodiscard]] std::string_view name() const noexcept { return value("name"); }
};
/// What to name: basic_node_annotation<> (a template only so that its bodies compile where used).
using node_annotation = basic_node_annotation<>;

} // namespace graphcap
