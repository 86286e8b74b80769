// graphcap/annotations/on.hpp - annot::on, the Annot policy that records: named scopes that
// tag the nodes a capture adds, and the hooks that make them the graph's annotations() and the
// registry's. Include <graphcap/annotations.hpp> (export, registry, traces) and link
// graphcap::annotations (CUPTI).
//
//   using annotated = graphcap::graph_with<graphcap::annot::on>;
//   annotated g;
//   g.capture([&](annotated::scope& cap) {
//     auto attention = cap.mark({{"name", "attention"}, {"layer", "3"}}); // inner scopes' keys win
//     attention_kernels(cap.stream());
//   });
//   for (const graphcap::node_annotation& node : g.annotations()) { ... }
//
// Nodes are found (node_discovery) from CUPTI's report of each node created while a scope is
// open (cuda/detail/creation_callbacks.hpp), or by walking the graph where someone else holds
// CUPTI's one subscriber; merged per node (annotations/detail/merge.hpp), ids resolved
// (annotations/detail/ids.hpp, cuda/detail/cupti.hpp). docs/annotations.md.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/annotations/detail/bodies.hpp>
#include <graphcap/annotations/detail/ids.hpp>
#include <graphcap/annotations/detail/layout.hpp>
#include <graphcap/annotations/detail/merge.hpp>
#include <graphcap/annotations/detail/scopes.hpp>
#include <graphcap/annotations/detail/walk.hpp>
#include <graphcap/annotations/notices.hpp>
#include <graphcap/annotations/registry.hpp>
#include <graphcap/annotations/settings.hpp>
#include <graphcap/annotations/values.hpp>
#include <graphcap/core/detail/diagnosis_hook.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/cuda/detail/capture_point.hpp>
#include <graphcap/cuda/detail/creation_callbacks.hpp>
#include <graphcap/cuda/detail/cupti.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/cuda/detail/graph_layout.hpp>
#include <graphcap/cuda/detail/graph_queries.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphcap::annot {

/// Annotations enabled: `mark` opens a scope that tags every node the capture adds while it
/// lives; the graph's annotations() lists them after the capture, and each instantiation
/// publishes them (by replayed node id) for traces, until that executable goes (the registry's
/// rule: annotations/registry.hpp). At capture: a CUPTI callback per node created
/// (node_discovery::creation_callbacks), or one cudaStreamGetCaptureInfo per scope and a walk
/// over the nodes it added (graph_walk); at capture end, each tagged node's type and kernel name;
/// at replay: nothing.
///
/// What can fail: CUDA or CUPTI refusing a query never fails the capture (that scope tags
/// nothing, or the capture has no ids, and the error is cleared). Memory can: mark() throws
/// std::bad_alloc into the work (the capture is discarded, as for any exception of the work),
/// and so does after_instantiate, which copies the list into the registry (the graph is left
/// empty). Out of memory while the capture ends (closing, merging) leaves it unannotated instead.
template <class Deferred = void>
class basic_on : public policy_base<policy_kind::annot> {
public:
  class marker;        // the RAII scope `mark` returns, defined below
  friend class marker; // closes its scope

  /// No capture yet, nothing annotated.
  basic_on() = default;
  // Moving a graph while it captures invalidates its scope and markers, as moving a container
  // invalidates iterators; the creation log is basic_on the heap, so CUPTI's callback never loses
  // it.
  /// Takes `other`'s annotations and its place in the registry.
  basic_on(basic_on&&) noexcept = default;
  /// Withdraws this graph's annotations from the registry, then takes `other`'s.
  basic_on& operator=(basic_on&&) noexcept = default;
  basic_on(const basic_on&) = delete;            ///< a graph's annotations are its own
  basic_on& operator=(const basic_on&) = delete; ///< a graph's annotations are its own
  /// Withdraws the annotations from the registry.
  ~basic_on() = default;

  /// Opens a scope named `name` ({"name": name}) basic_on `stream`, a stream of this graph's
  /// capture; elsewhere (no capture, another graph's stream) it does nothing.
  marker mark(cudaStream_t stream, std::string_view name);
  /// Opens a scope with key/value pairs; a key given twice keeps its first value.
  marker mark(cudaStream_t stream, std::initializer_list<annotation_entry> entries);

  /// This graph's annotated nodes (its last capture), in node creation order.
  [[nodiscard]] const std::vector<node_annotation>& annotations() const noexcept {
    return result_.annotations;
  }

  /// The last capture's scopes and conditional bodies, for write_dot (<graphcap/dot.hpp>).
  [[nodiscard]] const detail::graph_layout& layout() const noexcept { return layout_; }
  /// A conditional body of the capture, captured basic_on `stream` (<graphcap/control_flow.hpp>
  /// tells): its scopes and the parent's tag its nodes (annotations/detail/bodies.hpp).
  void add_body(cudaGraphNode_t conditional, cudaGraph_t body, cudaStream_t stream) noexcept {
    try {
      if (capturing_) {
        bodies_.add(queries_, conditional, body, stream);
      }
    } catch (...) { // out of memory: the body's scopes tag nothing
    }
  }

  /// Where this graph's node ids came from.
  [[nodiscard]] node_id_source id_source() const noexcept { return source_; }

  /// How this graph's last capture found its scopes' nodes.
  [[nodiscard]] node_discovery discovery() const noexcept { return discovery_; }

  // ---- hooks -----------------------------------------------------------------------------------

  /// Outside the capture: decide the id source (CUPTI initializes here, never inside a capture)
  /// and the discovery (CUPTI's subscriber is taken here, for the capture's length).
  void before_capture(cudaStream_t /*stream*/) noexcept {
    on_capture_abort();
    queries_.driver = detail::driver_if_available(); // resolved here: never inside a capture
    source_ = detail::current_id_source();
    const CUptiResult cupti = detail::cupti_probe();
    if (source_ != node_id_source::cupti && cupti != CUPTI_ERROR_NOT_INITIALIZED) {
      detail::notice_id_source(source_, cupti); // not when CUDA is unusable
    }
    discovery_ = source_ == node_id_source::cupti &&
                         preferred_node_discovery() == node_discovery::creation_callbacks &&
                         watch_.subscribe()
                     ? node_discovery::creation_callbacks
                     : node_discovery::graph_walk;
  }

  /// Remembers which capture is this graph's, so that scopes basic_on other captures do nothing.
  void after_capture_begin(cudaStream_t stream) noexcept {
    const std::optional<detail::capture_point> point = detail::active_capture_point(stream);
    if (!point) {
      return; // no scope will record; the capture goes basic_on, unannotated
    }
    const cudaGraph_t graph = point->graph;
    capture_id_ = point->capture;
    capture_stream_ = stream;
    graph_ = graph;
    capturing_ = true;
    walk_.start(queries_, graph);
    if (discovery_ == node_discovery::creation_callbacks && !watch_.start(graph)) {
      discovery_ = node_discovery::graph_walk; // out of memory: the walk needs none up front
    }
  }

  /// While the capture still runs: close open scopes, merge scopes per node, resolve the ids.
  void before_capture_end(cudaStream_t /*stream*/) noexcept {
    if (!capturing_) {
      return;
    }
    capturing_ = false;
    try {
      bodies_.close_all(queries_);
      for (std::size_t i = scopes_.records.size(); i-- > 0;) { // innermost first
        if (scopes_.records[i].open) {
          close_scope(static_cast<std::uint32_t>(i), generation_);
        }
      }
      watch_.finish();
      if (logged() && watch_.log().incomplete) {
        scopes_.closed
            .clear(); // a callback ran out of memory: the capture goes basic_on, unannotated
      }
      const std::span<const cudaGraphNode_t> tagged =
          logged() ? std::span<const cudaGraphNode_t>{watch_.log().nodes}
                   : std::span<const cudaGraphNode_t>{walk_.tagged()};
      merge_.merge(scopes_, tagged, logged(), result_);
      detail::annotations::record_scope_layout(scopes_, tagged, layout_);
      source_ = ids_.resolve(source_, logged(), queries_, graph_, result_);
      bodies_.annotate(source_, queries_, graph_, result_);
    } catch (...) { // out of memory: the capture goes basic_on, unannotated
      result_.annotations.clear();
      result_.clear_nodes();
      layout_.clear();
    }
    release_scopes();
  }

  /// The capture succeeded: read each node's type and kernel name from the template.
  void after_capture_end(cudaGraph_t graph) noexcept {
    detail::annotations::name_annotated_nodes(queries_, graph, result_);
    watch_.stop(); // CUPTI's subscriber goes back once the last annotated capture has ended
  }

  /// A new executable: re-key every node to the ids its replays carry, and publish them in place
  /// of the previous executable's (a cheap copy: values are shared; may throw std::bad_alloc).
  void after_instantiate(cudaGraphExec_t exec) {
    published_.withdraw(); // the previous executable is gone, or was updated in place
    const std::uint32_t exec_id = detail::exec_graph_id(source_, exec);
    if (detail::annotations::rekey_to_executable(result_, exec_id)) {
      published_ = detail::registry_entry{exec_id, result_.annotations};
    }
  }

  /// The capture failed: it leaves no annotation behind, here or in the registry.
  void on_capture_abort() noexcept {
    capturing_ = false;
    release_scopes();
    result_.annotations.clear();
    result_.clear_nodes();
    published_.withdraw();
    watch_.stop();
    layout_.clear();
  }

  /// Control flow made conditional node `node` with `bodies` (CUDA 13.0 cannot list them later).
  void note_conditional(cudaGraphNode_t node, const char* construct,
                        std::span<const cudaGraph_t> bodies) {
    layout_.conditionals.push_back({node, construct, {bodies.begin(), bodies.end()}});
  }

  /// Reset or destroyed: the annotations go, from the registry too (while a trace records: kept).
  void on_reset() noexcept { on_capture_abort(); }

private:
  /// True when this capture's nodes come from the creation log (node_discovery).
  [[nodiscard]] bool logged() const noexcept {
    return discovery_ == node_discovery::creation_callbacks;
  }

  marker open_scope(cudaStream_t stream, std::span<const annotation_entry> entries);

  /// Ends a scope: where the creation log stands now, or the walk of what it added. Never
  /// throws: a scope that cannot be walked, or recorded as closed, tags nothing.
  void close_scope(std::uint32_t index, std::uint64_t generation) noexcept {
    if (generation == generation_ &&
        (index & detail::annotations::body_annotations::body_scope_bit) != 0) {
      bodies_.close(queries_, index);
      return;
    }
    if (generation != generation_ || index >= scopes_.records.size() ||
        !scopes_.records[index].open) {
      return;
    }
    detail::annotations::scope_record& record = scopes_.records[index];
    record.open = false;
    if (const detail::diagnosis_hooks* diagnostics = detail::diagnosis()) {
      diagnostics->scope_closed(capture_stream_, index);
    }
    if (logged()) {
      record.nodes_end = watch_.position();
    } else if (!walk_.exit(record)) {
      return;
    }
    try {
      scopes_.closed.push_back(index);
    } catch (...) { // out of memory: this scope tags nothing
    }
  }

  /// Drops the per-scope bookkeeping, keeping its capacity; this capture's markers become inert.
  void release_scopes() noexcept {
    ++generation_;
    scopes_.clear();
    walk_.clear();
    bodies_.clear();
    ids_.clear();
    graph_ = nullptr;
  }

  // What the user gets, and where it is published.
  detail::annotations::annotated_nodes
      result_; // annotations, and their template nodes until the capture end
  detail::registry_entry published_;
  node_id_source source_ = node_id_source::none;
  node_discovery discovery_ = node_discovery::graph_walk;
  // The capture in progress.
  bool capturing_ = false;
  unsigned long long capture_id_ = 0;
  cudaStream_t capture_stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  std::uint64_t generation_ = 1; // a marker of an earlier capture must not close a new scope
  detail::annotations::capture_scopes scopes_;
  detail::graph_queries queries_;        // through the driver where it can
  detail::creation_watch watch_;         // creation_callbacks: CUPTI's subscriber (shared), the log
  detail::annotations::scope_walk walk_; // graph_walk
  detail::annotations::scope_merge merge_;
  detail::annotations::template_id_resolver ids_;
  detail::graph_layout layout_;                  // scopes and conditional bodies, for pictures
  detail::annotations::body_annotations bodies_; // conditional bodies: their scopes, their nodes
};
/// What to name: basic_on<> (a template only so that its bodies compile where used).
using on = basic_on<>;

/// The RAII scope on::mark returns: the nodes added while it lives are tagged. It must not
/// outlive the capture's graph; ending the capture first is fine (the scope closes there).
template <class Deferred>
class [[nodiscard(
    "a marker tags the nodes captured while it lives; name it")]] basic_on<Deferred>::marker {
public:
  /// A marker that tags nothing (what mark returns outside a capture).
  marker() noexcept = default;
  /// Takes `other`'s scope; `other` tags nothing.
  marker(marker && other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)), scope_(other.scope_),
        generation_(other.generation_) {}
  /// Closes this marker's scope, then takes `other`'s.
  marker& operator=(marker&& other) noexcept {
    if (this != &other) {
      close();
      owner_ = std::exchange(other.owner_, nullptr);
      scope_ = other.scope_;
      generation_ = other.generation_;
    }
    return *this;
  }
  marker(const marker&) = delete;            ///< one marker closes its scope
  marker& operator=(const marker&) = delete; ///< one marker closes its scope
  /// Closes the scope.
  ~marker() {
    close();
  }

  /// True while the marker tags what the capture adds (false outside a capture).
  [[nodiscard]] bool active() const noexcept {
    return owner_ != nullptr;
  }

  /// Closes the scope now (the destructor does it otherwise).
  void close() noexcept;

private:
  template <class>
  friend class basic_on;
  marker(basic_on * owner, std::uint32_t scope, std::uint64_t generation) noexcept
      : owner_(owner), scope_(scope), generation_(generation) {}

  basic_on* owner_ = nullptr;
  std::uint32_t scope_ = 0;
  std::uint64_t generation_ = 0;
};

template <class Deferred>
void basic_on<Deferred>::marker::close() noexcept {
  if (owner_ != nullptr) {
    std::exchange(owner_, nullptr)->close_scope(scope_, generation_);
  }
}

template <class Deferred>
auto basic_on<Deferred>::mark(cudaStream_t stream, std::string_view name) -> marker {
  const annotation_entry entry{"name", name};
  return open_scope(stream, std::span<const annotation_entry>{&entry, 1});
}

template <class Deferred>
auto basic_on<Deferred>::mark(cudaStream_t stream, std::initializer_list<annotation_entry> entries)
    -> marker {
  return open_scope(stream, std::span<const annotation_entry>{entries.begin(), entries.size()});
}

template <class Deferred>
auto basic_on<Deferred>::open_scope(cudaStream_t stream, std::span<const annotation_entry> entries)
    -> marker {
  if (!capturing_) {
    return {};
  }
  if (stream != capture_stream_) {
    if (const auto body = bodies_.open(queries_, stream, entries)) {
      return {this, *body, generation_};
    }
  }
  detail::annotations::scope_record record;
  if (logged()) {
    if (stream != capture_stream_ && queries_.active_capture_id(stream) != capture_id_) {
      return {}; // the capture's own stream (what cap.mark gives) needs no query
    }
    record.nodes_begin = watch_.position(); // what is created from now on, on any stream
  } else if (!walk_.enter(stream, capture_id_, record)) {
    return {};
  }
  const detail::diagnosis_hooks* diagnostics = detail::diagnosis();
  const std::string label = diagnostics ? detail::annotations::scope_label(entries) : std::string{};
  const std::uint32_t index = scopes_.open(record, entries); // may throw: label made first
  if (diagnostics) {
    diagnostics->scope_opened(capture_stream_, index, label);
  }
  return {this, index, generation_};
}

/// The 0.2 name of on::marker.
using on_marker
    [[deprecated("graphcap: annot::on_marker is spelled annot::on::marker since 0.3")]] =
        on::marker;

static_assert(annotation_policy<on> && annotation_across_bodies<on> && annotation_with_layout<on> &&
              annotation_with_records<on>);

} // namespace graphcap::annot
