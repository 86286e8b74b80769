// graphcap/fwd.hpp - the names of graphcap's main types, declared, and the small vocabulary
// types several headers share (a graph's state, the keep_graph tag, an annotation's key/value).
// (basic_graph is declared with its constraints, in basic_graph.hpp.)
#pragma once

#include <graphcap/config.hpp>

#include <cstdint>
#include <string_view>
#include <utility>

/// graphcap: capture CUDA work into a CUDA graph and replay it, every optional feature a policy
/// chosen at compile time. The graphs are basic_graph<Mode, Pool, Annot, Liveness> (lean_graph,
/// graph, graph_with<...>); their policies live in graphcap::mode, graphcap::pool,
/// graphcap::annot and graphcap::liveness; a capture in progress is a basic_scope.
namespace graphcap {

template <class Graph, class Kind>
class basic_scope;
class stream_ref;
class pool_handle;
struct pool_statistics;
template <class T>
class buffer;
struct update_result;
class condition;

/// The Mode policies: the cudaStreamCaptureMode a capture runs in. mode::global (the default:
/// capture-unsafe calls on any thread invalidate it), mode::thread_local_ (on this thread only),
/// mode::relaxed (none are refused). In core/mode.hpp; docs/threads.md.
namespace mode {}
/// The Pool policies: where memory allocated during a capture (cap.allocate<T>(n)) lives.
/// pool::off (the default: no allocation), pool::private_pool (graphcap::graph's), pool::shared,
/// pool::user, pool::graph_memory_nodes, and pool::sleepable (<graphcap/sleepable_pool.hpp>).
/// docs/pools.md.
namespace pool {}
/// The Annot policies: named scopes that tag captured nodes. annot::off (the default: marks
/// compile to nothing) and annot::on (<graphcap/annotations.hpp>, target graphcap::annotations:
/// CUPTI node ids, export and traces). docs/annotations.md.
namespace annot {}
/// The Liveness policies: whether a graph's inputs are still alive before each replay.
/// liveness::off (the default), liveness::check (<graphcap/liveness.hpp>), liveness::free_watch
/// (<graphcap/free_watch.hpp>, target graphcap::free_watch), and the inputs users declare
/// (exclude_from_liveness, add_liveness_input). docs/liveness.md.
namespace liveness {}

/// What a scope's end() does with the capture (core/scope.hpp, control_flow/conditional.hpp).
namespace capture_kind {
struct fresh;
struct update;
struct body;
} // namespace capture_kind

/// The scope a conditional body of a `Graph` gets (<graphcap/control_flow.hpp>): what a
/// capture's scope offers, in the body's capture.
template <class Graph>
using body_scope = basic_scope<Graph, capture_kind::body>;

/// Whether a condition takes its initial value at every launch of its graph.
enum class condition_reset : std::uint8_t {
  each_launch, ///< at the start of every launch (cudaGraphCondAssignDefault): the default
  never,       ///< never: the value persists across launches, and device code must set it before a
               ///< conditional node first reads it (CUDA defines no value before that)
};
/// `graphcap::make_condition(cap, 1, graphcap::reset_each_launch)`.
inline constexpr condition_reset reset_each_launch = condition_reset::each_launch;
/// `graphcap::make_condition(cap, 0, graphcap::keep_across_launches)`: set by device code, kept
/// between launches.
inline constexpr condition_reset keep_across_launches = condition_reset::never;

/// One key/value pair of an annotation, e.g. {"layer", "3"}.
using annotation_entry = std::pair<std::string_view, std::string_view>;

/// Where a graph is in its lifecycle.
enum class graph_state : std::uint8_t {
  empty,        ///< nothing captured (new, or after reset() or a failed capture)
  capturing,    ///< a capture scope is open
  captured,     ///< capture ended, template kept, not instantiated yet (keep_graph only)
  instantiated, ///< ready to replay
};

/// The state's name, for messages.
[[nodiscard]] constexpr std::string_view to_string(graph_state state) noexcept {
  switch (state) {
  case graph_state::empty:
    return "empty";
  case graph_state::capturing:
    return "capturing";
  case graph_state::captured:
    return "captured";
  case graph_state::instantiated:
    return "instantiated";
  }
  return "unknown";
}

/// Tag: keep the captured template after instantiation (like torch's keep_graph=True), for
/// raw_graph(), debug_dump(), editing, and instantiating again. Without it the template is
/// out of reach once the executable graph exists; the graph still holds it, for node_count()
/// to count when first read, and destroys it at reset(), a recapture or its own end.
struct keep_graph_t {
  explicit keep_graph_t() = default;
};
/// The keep_graph tag's value: `graphcap::graph g{graphcap::keep_graph};`.
inline constexpr keep_graph_t keep_graph{};

} // namespace graphcap
