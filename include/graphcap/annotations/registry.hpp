// graphcap/annotations/registry.hpp - the process-wide table of instantiated graphs'
// annotations, by executable graph id: what traces and profiles are matched against
// (recorded_annotations, find_annotation, clear_annotations).
#pragma once

#include <graphcap/annotations/values.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace graphcap {
namespace detail {

/// The annotations of the live annotated executables, by executable graph id, and of those that
/// went away while a trace_recorder recorded. Each executable's list is a copy (cheap: values
/// are shared, kernel names are views). Thread-safe.
class annotation_registry {
public:
  /// One executable's annotations, each id (exec_id << 32 | index), sorted by id.
  using list = std::shared_ptr<const std::vector<node_annotation>>;

  /// Makes `annotations` executable `exec_id`'s, replacing what it had.
  void publish(std::uint32_t exec_id, list annotations) {
    const std::lock_guard lock{mutex_};
    by_exec_.insert_or_assign(exec_id, std::move(annotations));
  }

  /// Every annotation with an id, by id.
  [[nodiscard]] std::vector<node_annotation> snapshot() const {
    const std::lock_guard lock{mutex_};
    std::vector<node_annotation> all;
    for (const auto& entry : by_exec_) {
      for (const node_annotation& node : *entry.second) {
        if (node.id != 0) {
          all.push_back(node);
        }
      }
    }
    return all; // by executable id, then index: by id
  }

  /// The annotation whose replayed id is `id`, if an executable listed here has it.
  [[nodiscard]] std::optional<node_annotation> find(std::uint64_t id) const {
    const std::lock_guard lock{mutex_};
    const auto entry = by_exec_.find(static_cast<std::uint32_t>(id >> 32U));
    if (entry == by_exec_.end()) {
      return std::nullopt;
    }
    const std::vector<node_annotation>& nodes = *entry->second;
    const auto found = std::lower_bound(
        nodes.begin(), nodes.end(), id,
        [](const node_annotation& node, std::uint64_t wanted) { return node.id < wanted; });
    if (found == nodes.end() || found->id != id) {
      return std::nullopt;
    }
    return *found;
  }

  /// Forgets every list.
  void clear() noexcept {
    const std::lock_guard lock{mutex_};
    by_exec_.clear();
  }

private:
  mutable std::mutex mutex_;
  std::map<std::uint32_t, list> by_exec_;
};

/// The process's registry.
inline annotation_registry& registry() {
  static annotation_registry instance;
  return instance;
}

} // namespace detail

/// Every instantiated annotated graph's annotations of this process, by id (graphs already
/// destroyed too, so that a trace exported later still finds them), until clear_annotations().
[[nodiscard]] inline std::vector<node_annotation> recorded_annotations() {
  return detail::registry().snapshot();
}

/// The annotation of the replayed node with CUPTI id `id` (a kernel record's graphNodeId).
[[nodiscard]] inline std::optional<node_annotation> find_annotation(std::uint64_t id) {
  return detail::registry().find(id);
}

/// Forgets every recorded annotation. Graphs keep their own (annotations()).
inline void clear_annotations() noexcept {
  detail::registry().clear();
}

} // namespace graphcap
