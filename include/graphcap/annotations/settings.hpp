// graphcap/annotations/settings.hpp - the process-wide choices that annotated captures read when
// they begin: how scopes find their nodes (node_discovery, set_node_discovery), whether CUPTI's
// callback subscriber is kept between captures (keep_cupti_subscriber), and where node ids come
// from (annotation_id_source). Captures in progress keep what they began with.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/detail/creation_callbacks.hpp>
#include <graphcap/cuda/detail/cupti.hpp>

#include <atomic>
#include <cstdint>

namespace graphcap {

/// How annot::on finds the nodes a scope tags.
enum class node_discovery : std::uint8_t {
  /// CUPTI reports every node the capture creates, as it is created: a scope tags the nodes
  /// created in its capture while it is open, on any stream joined into the capture. Needs CUPTI's
  /// one callback subscriber, which graphcap holds only while annotated captures run.
  creation_callbacks,
  /// A walk of the graph: a scope tags what it added that is reachable from its stream's frontier
  /// at entry; work on other streams counts once joined into that stream inside the scope. Used
  /// where CUPTI's subscriber is held by someone else (a profiler, compute-sanitizer), or when
  /// asked for with set_node_discovery.
  graph_walk,
};

namespace detail {
/// The discovery set_node_discovery chose, read by every annotated capture as it begins.
template <class = void>
std::atomic<node_discovery>& preferred_discovery() noexcept {
  static std::atomic<node_discovery> preferred{node_discovery::creation_callbacks};
  return preferred;
}
} // namespace detail

/// The discovery the next annotated captures use: creation_callbacks (the default, falling back to
/// graph_walk where CUPTI's subscriber is taken), or graph_walk, which leaves CUPTI's subscriber
/// alone (for a program whose own CUPTI callbacks, or PyTorch's profiler, must start during a
/// capture). Captures in progress keep theirs.
template <class = void>
void set_node_discovery(node_discovery preferred) noexcept {
  detail::preferred_discovery().store(preferred);
}

/// What set_node_discovery chose (creation_callbacks unless told otherwise).
template <class = void>
[[nodiscard]] node_discovery preferred_node_discovery() noexcept {
  return detail::preferred_discovery().load();
}

/// Whether graphcap keeps CUPTI's callback subscriber between annotated captures. By default
/// (false) each creation_callbacks capture takes it at its start and gives it back at its end,
/// about 1.5-3 us per capture on the H200; kept (true), it is taken once, at the next annotated
/// capture, and held until keep_cupti_subscriber(false), which gives it back at once if no
/// capture is using it. Meanwhile other CUPTI users in the process (a profiler started later)
/// find it taken.
template <class = void>
void keep_cupti_subscriber(bool keep) noexcept {
  detail::creation_callbacks::instance().keep_between_captures(keep);
}

/// Where the next capture's node ids will come from (probes CUPTI once per process).
template <class = void>
[[nodiscard]] node_id_source annotation_id_source() noexcept {
  return detail::current_id_source();
}

} // namespace graphcap
