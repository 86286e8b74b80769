// graphcap/annotations/registry.hpp - the process-wide table of annotated executables'
// annotations, by executable graph id: what traces and profiles are matched against
// (recorded_annotations, find_annotation, clear_annotations).
//
// Lifetime (docs/annotations.md, "Where annotations live"): an executable's annotations are in
// the table while the executable exists. annot::on publishes them when it instantiates and
// withdraws them when the executable goes: reset(), destruction, another instantiation, a
// recapture, a capture that fails after instantiating. Except while a trace_recorder records:
// what is withdrawn then is kept, still found, until the recorder stops; the recorder takes the
// annotations of the executables its kernels ran in, and the table drops the rest of what it kept
// (when the last recorder stops: one records at a time). So the table holds what is alive, plus,
// during a recording, what the recording may still need.
#pragma once

#include <graphcap/config.hpp>

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
template <class = void>
class basic_annotation_registry {
public:
  /// One executable's annotations, each id (exec_id << 32 | index), sorted by id.
  using list = std::shared_ptr<const std::vector<node_annotation>>;

  /// Makes `annotations` executable `exec_id`'s (replacing what it had: kept while a recorder
  /// records). Throws std::bad_alloc, having changed nothing.
  void publish(std::uint32_t exec_id, list annotations) {
    const std::lock_guard lock{mutex_};
    const auto [place, added] = live_.try_emplace(exec_id, annotations);
    if (!added && place->second != annotations) {
      if (recorders_ != 0) {
        kept_.insert_or_assign(exec_id, place->second);
      }
      place->second = std::move(annotations);
    }
  }

  /// Withdraws `annotations`, published for `exec_id`; nothing if clear() or another publish
  /// replaced them since. While a recorder records, they are kept (found) until it stops.
  void withdraw(std::uint32_t exec_id, const list& annotations) noexcept {
    const std::lock_guard lock{mutex_};
    const auto place = live_.find(exec_id);
    if (place == live_.end() || place->second != annotations) {
      return;
    }
    auto entry = live_.extract(place); // moved as a node: keeping it allocates nothing
    if (recorders_ == 0) {
      return; // dropped with `entry`
    }
    auto kept = kept_.insert(std::move(entry));
    if (!kept.inserted) { // kept before (an executable updated in place): the newer wins
      kept.position->second = std::move(kept.node.mapped());
    }
  }

  /// A trace recorder begins recording: what is withdrawn from now on is kept.
  void begin_recording() noexcept {
    const std::lock_guard lock{mutex_};
    ++recorders_;
  }

  /// A recorder stopped: when it was the last, what was kept for recordings is dropped.
  void end_recording() noexcept {
    const std::lock_guard lock{mutex_};
    if (recorders_ != 0 && --recorders_ == 0) {
      kept_.clear();
    }
  }

  /// The lists of the executables `exec_ids` (sorted), live or kept; those unknown are skipped.
  [[nodiscard]] std::vector<list> lists_of(const std::vector<std::uint32_t>& exec_ids) const {
    const std::lock_guard lock{mutex_};
    std::vector<list> found;
    for (const std::uint32_t exec_id : exec_ids) {
      if (const list* annotations = find_list(exec_id); annotations != nullptr) {
        found.push_back(*annotations);
      }
    }
    return found;
  }

  /// Every annotation with an id, by id.
  [[nodiscard]] std::vector<node_annotation> snapshot() const {
    const std::lock_guard lock{mutex_};
    std::vector<std::pair<std::uint32_t, const std::vector<node_annotation>*>> lists;
    for (const auto& [exec_id, annotations] : live_) {
      lists.emplace_back(exec_id, annotations.get());
    }
    for (const auto& [exec_id, annotations] : kept_) {
      if (!live_.contains(exec_id)) { // a live executable's list is the newer one
        lists.emplace_back(exec_id, annotations.get());
      }
    }
    std::sort(lists.begin(), lists.end());
    std::vector<node_annotation> all;
    for (const auto& entry : lists) {
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
    const list* annotations = find_list(static_cast<std::uint32_t>(id >> 32U));
    if (annotations == nullptr) {
      return std::nullopt;
    }
    const std::vector<node_annotation>& nodes = **annotations;
    const auto found = std::lower_bound(
        nodes.begin(), nodes.end(), id,
        [](const node_annotation& node, std::uint64_t wanted) { return node.id < wanted; });
    if (found == nodes.end() || found->id != id) {
      return std::nullopt;
    }
    return *found;
  }

  /// How many executables' lists are held: live ones and those kept for a recording.
  [[nodiscard]] std::size_t executables() const noexcept {
    const std::lock_guard lock{mutex_};
    return live_.size() + kept_.size();
  }

  /// How many of them are kept for a recording (their executables are gone).
  [[nodiscard]] std::size_t kept_for_recording() const noexcept {
    const std::lock_guard lock{mutex_};
    return kept_.size();
  }

  /// Forgets every list, live and kept.
  void clear() noexcept {
    const std::lock_guard lock{mutex_};
    live_.clear();
    kept_.clear();
  }

private:
  [[nodiscard]] const list* find_list(std::uint32_t exec_id) const noexcept { // under mutex_
    if (const auto live = live_.find(exec_id); live != live_.end()) {
      return &live->second;
    }
    const auto kept = kept_.find(exec_id);
    return kept != kept_.end() ? &kept->second : nullptr;
  }

  mutable std::mutex mutex_;
  std::map<std::uint32_t, list> live_; // by the executables that exist
  std::map<std::uint32_t, list> kept_; // withdrawn while a recorder records
  unsigned recorders_ = 0;
};
/// What to name: basic_annotation_registry<> (a template only so that its bodies compile where
/// used).
using annotation_registry = basic_annotation_registry<>;

/// The process's registry. Never destroyed: graphs with static storage duration withdraw from it
/// when they are destroyed, which may be after it would have been.
template <class = void>
annotation_registry& registry() {
  static annotation_registry* const instance = new annotation_registry; // NOLINT: see above
  return *instance;
}

/// One executable's place in the registry, for as long as this handle lives (move-only): the
/// annotations are withdrawn when it is destroyed, assigned over, or withdraw() is called.
template <class = void>
class basic_registry_entry {
public:
  /// No entry.
  basic_registry_entry() noexcept = default;
  /// Publishes `annotations` for executable `exec_id`. Throws std::bad_alloc, publishing nothing.
  basic_registry_entry(std::uint32_t exec_id, annotation_registry::list annotations)
      : exec_id_(exec_id), annotations_(std::move(annotations)) {
    registry().publish(exec_id_, annotations_);
  }
  /// Publishes a copy of `annotations` (ids of executable `exec_id`), sorted by id for lookups.
  /// Throws std::bad_alloc, publishing nothing.
  basic_registry_entry(std::uint32_t exec_id, const std::vector<node_annotation>& annotations)
      : basic_registry_entry(exec_id, sorted_by_id(annotations)) {}
  /// Takes `other`'s entry; `other` has none.
  basic_registry_entry(basic_registry_entry&& other) noexcept
      : exec_id_(other.exec_id_), annotations_(std::move(other.annotations_)) {}
  /// Withdraws this entry, then takes `other`'s.
  basic_registry_entry& operator=(basic_registry_entry&& other) noexcept {
    if (this != &other) {
      withdraw();
      exec_id_ = other.exec_id_;
      annotations_ = std::move(other.annotations_);
    }
    return *this;
  }
  basic_registry_entry(const basic_registry_entry&) = delete;            ///< one owner per entry
  basic_registry_entry& operator=(const basic_registry_entry&) = delete; ///< one owner per entry
  /// Withdraws the entry.
  ~basic_registry_entry() { withdraw(); }

  /// Withdraws the annotations from the registry (kept there while a recorder records).
  void withdraw() noexcept {
    if (annotations_) {
      registry().withdraw(exec_id_, annotations_);
      annotations_.reset();
    }
  }

private:
  static annotation_registry::list sorted_by_id(const std::vector<node_annotation>& annotations) {
    const auto by_id = [](const node_annotation& a, const node_annotation& b) {
      return a.id < b.id;
    };
    auto copy = std::make_shared<std::vector<node_annotation>>(annotations);
    if (!std::is_sorted(copy->begin(), copy->end(), by_id)) { // nodes come in creation order
      std::sort(copy->begin(), copy->end(), by_id);
    }
    return copy;
  }

  std::uint32_t exec_id_ = 0;
  annotation_registry::list annotations_;
};
/// What to name: basic_registry_entry<> (a template only so that its bodies compile where used).
using registry_entry = basic_registry_entry<>;

} // namespace detail

/// The annotations of every annotated executable alive in this process, by id, and of those that
/// went away while a trace_recorder recorded, until it stops (see the top of this header).
template <class = void>
[[nodiscard]] std::vector<node_annotation> recorded_annotations() {
  return detail::registry().snapshot();
}

/// The annotation of the replayed node with CUPTI id `id` (a kernel record's graphNodeId), from
/// what recorded_annotations() lists.
template <class = void>
[[nodiscard]] std::optional<node_annotation> find_annotation(std::uint64_t id) {
  return detail::registry().find(id);
}

/// Forgets every recorded annotation, those kept for a recording trace_recorder too. Graphs keep
/// their own (annotations()) and publish them again when they next instantiate.
template <class = void>
void clear_annotations() noexcept {
  detail::registry().clear();
}

} // namespace graphcap
