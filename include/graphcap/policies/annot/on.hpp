// graphcap/policies/annot/on.hpp - annot::on: named scopes that tag the nodes a capture adds, their
// export (annotations(), JSON) and a trace recorder that puts replayed kernels in lanes named by
// their annotations. Link graphcap::annotations (it adds CUPTI); the core never includes this.
//
//   using annotated = graphcap::graph_with<graphcap::annot::on>;
//   annotated g;
//   g.capture([&](annotated::scope& cap) {
//     auto attention = cap.mark("attention");                    // {"name": "attention"}
//     attention_kernels(cap.stream());
//     {
//       auto mlp = cap.mark({{"name", "mlp"}, {"layer", "3"}});  // inner keys win
//       mlp_kernels(cap.stream());
//     }
//   });
//   for (const graphcap::node_annotation& node : g.annotations()) { ... }
//
// How nodes are found (node_discovery): CUPTI reports each node as the capture creates it, and a
// scope tags the nodes created while it is open (detail/creation_callbacks.hpp). Where CUPTI's one
// callback subscriber is held by someone else (or when asked), the graph is walked instead: at
// scope entry, the capture stream's frontier (cudaStreamGetCaptureInfo) and the frontier's existing
// dependents are recorded; at exit, only what was added is walked: the new dependents of the
// frontier and everything reachable from them (work forked to other streams inside the scope
// included). A scope entered with an empty frontier (at capture start) starts from the graph's new
// roots instead. Ids: see detail/cupti.hpp and docs/annotations.md.
#pragma once

#include <graphcap/detail/capture_mode_guard.hpp>
#include <graphcap/detail/creation_callbacks.hpp>
#include <graphcap/detail/cupti.hpp>
#include <graphcap/detail/driver.hpp>
#include <graphcap/detail/graph_queries.hpp>
#include <graphcap/detail/hooks.hpp>
#include <graphcap/error.hpp>
#include <graphcap/policies/annot/off.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace graphcap {

/// The key/value pairs of an annotated node, sorted by key. Immutable and shared: the nodes of
/// one scope share one list, so that copying an annotation copies no strings.
class annotation_values {
public:
  using value_type = std::pair<std::string, std::string>;
  using const_iterator = std::vector<value_type>::const_iterator;

  annotation_values() noexcept = default;
  /// Pairs in any order; a key given twice keeps its first value.
  annotation_values(std::initializer_list<value_type> pairs)
      : annotation_values(std::vector<value_type>(pairs)) {}
  explicit annotation_values(std::vector<value_type> pairs) {
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

  [[nodiscard]] const_iterator begin() const noexcept { return list().begin(); }
  [[nodiscard]] const_iterator end() const noexcept { return list().end(); }
  [[nodiscard]] std::size_t size() const noexcept { return list().size(); }
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

  friend bool operator==(const annotation_values& a, const annotation_values& b) noexcept {
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

/// One annotated node of a captured graph. Cheap to copy: the kernel's name lives as long as the
/// process, the values are shared.
struct node_annotation {
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

/// A node type's short name ("kernel", "memcpy", "event_record", ...).
[[nodiscard]] constexpr std::string_view to_string(cudaGraphNodeType type) noexcept {
  switch (type) {
  case cudaGraphNodeTypeKernel:
    return "kernel";
  case cudaGraphNodeTypeMemcpy:
    return "memcpy";
  case cudaGraphNodeTypeMemset:
    return "memset";
  case cudaGraphNodeTypeHost:
    return "host";
  case cudaGraphNodeTypeGraph:
    return "child_graph";
  case cudaGraphNodeTypeEmpty:
    return "empty";
  case cudaGraphNodeTypeWaitEvent:
    return "event_wait";
  case cudaGraphNodeTypeEventRecord:
    return "event_record";
  case cudaGraphNodeTypeExtSemaphoreSignal:
    return "semaphore_signal";
  case cudaGraphNodeTypeExtSemaphoreWait:
    return "semaphore_wait";
  case cudaGraphNodeTypeMemAlloc:
    return "mem_alloc";
  case cudaGraphNodeTypeMemFree:
    return "mem_free";
  case cudaGraphNodeTypeConditional:
    return "conditional";
  default:
    return "unknown";
  }
}

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
inline std::atomic<node_discovery>& preferred_discovery() noexcept {
  static std::atomic<node_discovery> preferred{node_discovery::creation_callbacks};
  return preferred;
}
} // namespace detail

/// The discovery the next annotated captures use: creation_callbacks (the default, falling back to
/// graph_walk where CUPTI's subscriber is taken), or graph_walk, which leaves CUPTI's subscriber
/// alone (for a program whose own CUPTI callbacks, or PyTorch's profiler, must start during a
/// capture). Captures in progress keep theirs.
inline void set_node_discovery(node_discovery preferred) noexcept {
  detail::preferred_discovery().store(preferred);
}

/// What set_node_discovery chose (creation_callbacks unless told otherwise).
[[nodiscard]] inline node_discovery preferred_node_discovery() noexcept {
  return detail::preferred_discovery().load();
}

/// Whether graphcap keeps CUPTI's callback subscriber between annotated captures. By default
/// (false) each creation_callbacks capture takes it at its start and gives it back at its end,
/// about 1.5-3 us per capture on the H200; kept (true), it is taken once, at the next annotated
/// capture, and held until keep_cupti_subscriber(false), which gives it back at once if no
/// capture is using it. Meanwhile other CUPTI users in the process (a profiler started later)
/// find it taken.
inline void keep_cupti_subscriber(bool keep) noexcept {
  detail::creation_callbacks::instance().keep_between_captures(keep);
}

/// Receives the one notice annotations give when they run degraded (no CUPTI, no ids, no
/// traces). The default handler writes it to std::clog.
using annotation_notice_handler = std::function<void(std::string_view)>;

namespace detail {

struct annotation_notices {
  std::mutex mutex;
  annotation_notice_handler handler;
  bool given = false;
};

inline annotation_notices& notices() {
  static annotation_notices state;
  return state;
}

/// Gives `message` to the handler, once per process (or per set_annotation_notice_handler).
inline void notice_once(const std::string& message) noexcept {
  try {
    annotation_notices& state = notices();
    const std::lock_guard lock{state.mutex};
    if (state.given) {
      return;
    }
    state.given = true;
    if (state.handler) {
      state.handler(message);
    } else {
      std::clog << "graphcap: " << message << '\n';
    }
  } catch (...) { // a notice must never fail a capture
  }
}

/// Every instantiated graph's annotations, by executable graph id: what a trace is matched
/// against. Each executable's list is a copy (cheap: values are shared, kernel names are views),
/// dropped only by clear_annotations().
class annotation_registry {
public:
  using list = std::shared_ptr<const std::vector<node_annotation>>;

  /// `annotations`: the executable's nodes, each id (exec_id << 32 | index), sorted by id.
  void publish(std::uint32_t exec_id, list annotations) {
    const std::lock_guard lock{mutex_};
    by_exec_.insert_or_assign(exec_id, std::move(annotations));
  }
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
  void clear() noexcept {
    const std::lock_guard lock{mutex_};
    by_exec_.clear();
  }

private:
  mutable std::mutex mutex_;
  std::map<std::uint32_t, list> by_exec_;
};

inline annotation_registry& registry() {
  static annotation_registry instance;
  return instance;
}

// ---- JSON
// ----------------------------------------------------------------------------------------

inline void write_json_string(std::ostream& out, std::string_view text) {
  out << '"';
  for (const char c : text) {
    switch (c) {
    case '"':
      out << "\\\"";
      break;
    case '\\':
      out << "\\\\";
      break;
    case '\n':
      out << "\\n";
      break;
    case '\t':
      out << "\\t";
      break;
    case '\r':
      out << "\\r";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        constexpr std::string_view hex = "0123456789abcdef";
        const auto code = static_cast<unsigned char>(c);
        out << "\\u00" << hex[code >> 4U] << hex[code & 0xfU];
      } else {
        out << c;
      }
    }
  }
  out << '"';
}

/// Microseconds with nanosecond digits, as Chrome traces want them ("12.345").
inline void write_microseconds(std::ostream& out, std::uint64_t nanoseconds) {
  out << nanoseconds / 1000;
  const std::uint64_t rest = nanoseconds % 1000;
  if (rest != 0) {
    char digits[4] = {'0', '0', '0', '\0'};
    const std::uint64_t tens = rest / 10;
    digits[0] = static_cast<char>('0' + rest / 100);
    digits[1] = static_cast<char>('0' + tens % 10);
    digits[2] = static_cast<char>('0' + rest % 10);
    out << '.' << digits;
  }
}

inline void open_for_writing(std::ofstream& file, const std::string& path, std::string_view what) {
  file.open(path, std::ios::out | std::ios::trunc);
  if (!file) {
    throw error("graphcap: cannot write " + std::string{what} + " to '" + path +
                "': the file could not be opened (does its directory exist, is it writable?)");
  }
}

} // namespace detail

/// Replaces the receiver of the degraded-annotations notice (an empty function restores the
/// default, std::clog) and re-arms it: the next degradation is told once more.
inline void set_annotation_notice_handler(annotation_notice_handler handler) {
  detail::annotation_notices& state = detail::notices();
  const std::lock_guard lock{state.mutex};
  state.handler = std::move(handler);
  state.given = false;
}

/// Where the next capture's node ids will come from (probes CUPTI once per process).
[[nodiscard]] inline node_id_source annotation_id_source() noexcept {
  return detail::current_id_source();
}

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

/// Writes `annotations` as JSON: {"annotations": [{"id", "template_id", "type", "kernel",
/// "values": {key: value}}]}. Ids are JSON numbers (64-bit: read them as integers).
inline void write_annotations_json(std::ostream& out, const std::vector<node_annotation>& list) {
  out << "{\"annotations\": [";
  const char* separator = "\n  ";
  for (const node_annotation& node : list) {
    out << separator << "{\"id\": " << node.id << ", \"template_id\": " << node.template_id
        << ", \"type\": ";
    detail::write_json_string(out, to_string(node.type));
    out << ", \"kernel\": ";
    detail::write_json_string(out, node.kernel);
    out << ", \"values\": {";
    const char* comma = "";
    for (const auto& [key, value] : node.values) {
      out << comma;
      detail::write_json_string(out, key);
      out << ": ";
      detail::write_json_string(out, value);
      comma = ", ";
    }
    out << "}}";
    separator = ",\n  ";
  }
  out << "\n]}\n";
}

/// The same, into the file at `path` (replaced). Throws graphcap::error if it cannot be written.
inline void write_annotations_json(const std::string& path,
                                   const std::vector<node_annotation>& list) {
  std::ofstream file;
  detail::open_for_writing(file, path, "annotations");
  write_annotations_json(file, list);
  if (!file.flush()) {
    throw error("graphcap: writing annotations to '" + path + "' failed (disk full?)");
  }
}

namespace annot {

/// Annotations enabled: `mark` opens a scope that tags every node the capture adds while it
/// lives; the graph's annotations() lists them after the capture, and each instantiation
/// publishes them (by replayed node id) for traces. At capture: a CUPTI callback per node created
/// (node_discovery::creation_callbacks), or one cudaStreamGetCaptureInfo per scope and a walk over
/// the nodes it added (graph_walk); at capture end, each tagged node's type and kernel name; at
/// replay: nothing.
class on : public detail::no_hooks<detail::annot_category> {
public:
  /// The RAII scope `mark` returns: the nodes added while it lives are tagged. It must not
  /// outlive the capture's graph; ending the capture first is fine (the scope closes there).
  class [[nodiscard("a marker tags the nodes captured while it lives; name it")]] marker {
  public:
    /// A marker that tags nothing (what mark returns outside a capture).
    marker() noexcept = default;
    marker(marker && other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)), scope_(other.scope_),
          generation_(other.generation_) {}
    marker& operator=(marker&& other) noexcept {
      if (this != &other) {
        close();
        owner_ = std::exchange(other.owner_, nullptr);
        scope_ = other.scope_;
        generation_ = other.generation_;
      }
      return *this;
    }
    marker(const marker&) = delete;
    marker& operator=(const marker&) = delete;
    ~marker() {
      close();
    }

    /// True while the marker tags what the capture adds (false outside a capture).
    [[nodiscard]] bool active() const noexcept {
      return owner_ != nullptr;
    }

    /// Closes the scope now (the destructor does it otherwise).
    void close() noexcept {
      if (owner_ != nullptr) {
        std::exchange(owner_, nullptr)->close_scope(scope_, generation_);
      }
    }

  private:
    friend class on;
    marker(on * owner, std::uint32_t scope, std::uint64_t generation) noexcept
        : owner_(owner), scope_(scope), generation_(generation) {}

    on* owner_ = nullptr;
    std::uint32_t scope_ = 0;
    std::uint64_t generation_ = 0;
  };

  on() = default;
  // Moving a graph while it captures invalidates its scope and markers, as moving a container
  // invalidates iterators; the creation log is on the heap, so CUPTI's callback never loses it.
  on(on&&) noexcept = default;
  on& operator=(on&&) noexcept = default;
  on(const on&) = delete;
  on& operator=(const on&) = delete;
  ~on() = default;

  /// Opens a scope named `name` ({"name": name}) on `stream`, a stream of this graph's capture.
  /// Outside a capture (or on a stream that is not in this graph's capture) it does nothing.
  marker mark(cudaStream_t stream, std::string_view name) {
    const annotation_entry entry{"name", name};
    return open_scope(stream, std::span<const annotation_entry>{&entry, 1});
  }

  /// Opens a scope with key/value pairs; a key given twice keeps its first value.
  marker mark(cudaStream_t stream, std::initializer_list<annotation_entry> entries) {
    return open_scope(stream, std::span<const annotation_entry>{entries.begin(), entries.size()});
  }

  /// This graph's annotated nodes (its last capture), in node creation order.
  [[nodiscard]] const std::vector<node_annotation>& annotations() const noexcept { return list_; }

  /// Where this graph's node ids came from.
  [[nodiscard]] node_id_source id_source() const noexcept { return source_; }

  /// How this graph's last capture found its scopes' nodes.
  [[nodiscard]] node_discovery discovery() const noexcept { return discovery_; }

  // ---- hooks -----------------------------------------------------------------------------------

  /// Outside the capture: decide the id source (CUPTI initializes here, never inside a capture)
  /// and the discovery (CUPTI's subscriber is taken here, for the capture's length).
  void before_capture(cudaStream_t /*stream*/) {
    clear_capture();
    list_.clear();
    watch_.stop();
    queries_.driver = detail::driver_if_available(); // resolved here: never inside a capture
    source_ = detail::current_id_source();
    const CUptiResult cupti = detail::cupti_probe();
    if (source_ != node_id_source::cupti && cupti != CUPTI_ERROR_NOT_INITIALIZED) {
      detail::notice_once(detail::id_source_reason(source_, cupti)); // not when CUDA is unusable
    }
    discovery_ = source_ == node_id_source::cupti &&
                         preferred_node_discovery() == node_discovery::creation_callbacks &&
                         watch_.subscribe()
                     ? node_discovery::creation_callbacks
                     : node_discovery::graph_walk;
  }

  /// Remembers which capture is this graph's, so that scopes on other captures do nothing.
  void after_capture_begin(cudaStream_t stream) noexcept {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaGraph_t graph = nullptr;
    if (cudaStreamGetCaptureInfo(stream, &status, &id, &graph) != cudaSuccess ||
        status != cudaStreamCaptureStatusActive || graph == nullptr) {
      static_cast<void>(cudaGetLastError());
      return; // no scope will record: annotations never fail a capture
    }
    capture_id_ = id;
    capture_stream_ = stream;
    graph_ = graph;
    capturing_ = true;
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
      for (std::size_t i = scopes_.size(); i-- > 0;) { // innermost first
        if (scopes_[i].open) {
          close_scope(static_cast<std::uint32_t>(i), generation_);
        }
      }
      watch_.finish();
      if (logged() && watch_.log().incomplete) {
        closed_.clear(); // a callback ran out of memory: the capture goes on, unannotated
      }
      merge_scopes();
      resolve_template_ids();
    } catch (...) { // out of memory: the capture goes on, unannotated
      list_.clear();
      nodes_.clear();
    }
    release_scopes();
  }

  /// The capture succeeded: read each node's type and kernel name from the template.
  void after_capture_end(cudaGraph_t /*graph*/) {
    std::vector<node_annotation>& list = list_;
    detail::kernel_names names{queries_.driver};
    std::size_t kept = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const cudaGraphNodeType type = queries_.type(nodes_[i]);
      if (type == cudaGraphNodeTypeEmpty) {
        continue; // joins, not work: nothing to name
      }
      node_annotation& node = list[i];
      node.type = type;
      if (type == cudaGraphNodeTypeKernel) {
        node.kernel = names.of(nodes_[i]);
      }
      if (kept != i) {
        list[kept] = std::move(node);
      }
      ++kept;
    }
    list.resize(kept);
    nodes_.clear();
    watch_.stop(); // CUPTI's subscriber goes back once the last annotated capture has ended
  }

  /// A new executable: re-key every node to the ids its replays carry, and publish them (a copy:
  /// cheap, since values are shared and kernel names are views).
  void after_instantiate(cudaGraphExec_t exec) {
    if (list_.empty()) {
      return;
    }
    const std::uint32_t exec_id = detail::exec_graph_id(source_, exec);
    bool any = false;
    for (node_annotation& node : list_) {
      node.id = exec_id != 0 && node.template_id != 0
                    ? detail::replayed_node_id(exec_id, node.template_id)
                    : 0;
      any = any || node.id != 0;
    }
    if (any) {
      auto published = std::make_shared<std::vector<node_annotation>>(list_);
      if (!std::is_sorted(published->begin(), published->end(), by_id)) { // looked up by id
        std::sort(published->begin(), published->end(), by_id);
      }
      detail::registry().publish(exec_id, std::move(published));
    }
  }

  /// The capture failed: it leaves no annotation behind.
  void on_capture_abort() noexcept {
    capturing_ = false;
    clear_capture();
    list_.clear();
    watch_.stop();
  }

  void on_reset() noexcept { on_capture_abort(); }

private:
  /// One mark(): its key/values, what the graph looked like at entry, then the nodes it tagged.
  /// Ranges index the flat vectors below, so that a scope allocates nothing once they have grown.
  struct scope_record {
    std::uint32_t entries_begin = 0;
    std::uint32_t entries_end = 0;
    std::uint32_t frontier_begin = 0; // the stream's frontier at entry (in boundary_)
    std::uint32_t frontier_end = 0;
    std::uint32_t known_end = 0;   // [frontier_end, known_end): the frontier's dependents, or the
                                   // graph's roots when the frontier was empty, at entry
    std::uint32_t nodes_begin = 0; // graph_walk: in tagged_, set at exit; creation_callbacks: in
    std::uint32_t nodes_end = 0;   // the creation log, set at entry and exit
    bool open = true;
  };

  /// True when this capture's nodes come from the creation log (node_discovery).
  [[nodiscard]] bool logged() const noexcept {
    return discovery_ == node_discovery::creation_callbacks;
  }

  marker open_scope(cudaStream_t stream, std::span<const annotation_entry> entries) {
    if (!capturing_) {
      return {};
    }
    scope_record record;
    if (logged()) {
      if (stream != capture_stream_ && !in_this_capture(stream)) {
        return {}; // the capture's own stream (what cap.mark gives) needs no query
      }
      record.nodes_begin = watch_.position(); // what is created from now on, on any stream
    } else if (!snapshot_frontier(stream, record)) {
      return {};
    }
    record.entries_begin = static_cast<std::uint32_t>(entries_.size());
    for (const annotation_entry& entry : entries) {
      entries_.emplace_back(entry.first, entry.second);
    }
    record.entries_end = static_cast<std::uint32_t>(entries_.size());
    scopes_.push_back(record);
    return {this, static_cast<std::uint32_t>(scopes_.size() - 1), generation_};
  }

  /// Whether `stream` is capturing into this graph's capture.
  [[nodiscard]] bool in_this_capture(cudaStream_t stream) const noexcept {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    const cudaGraphNode_t* frontier = nullptr;
    std::size_t count = 0;
    return queries_.capture_info(stream, status, id, frontier, count) &&
           status == cudaStreamCaptureStatusActive && id == capture_id_;
  }

  /// graph_walk: records `stream`'s frontier and what already depends on it (or the graph's
  /// roots, if the frontier is empty). False if the scope cannot record: `stream` is not in this
  /// capture, or CUDA refused a query.
  bool snapshot_frontier(cudaStream_t stream, scope_record& record) {
    // Not the graph: after_capture_begin knew it (asking for it again costs more than the rest).
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    const cudaGraphNode_t* frontier = nullptr;
    std::size_t count = 0;
    if (!queries_.capture_info(stream, status, id, frontier, count)) {
      return false;
    }
    if (status != cudaStreamCaptureStatusActive || id != capture_id_) {
      return false; // a stream of another capture, or one this capture never joined
    }
    record.frontier_begin = static_cast<std::uint32_t>(boundary_.size());
    boundary_.insert(boundary_.end(), frontier, frontier + count);
    record.frontier_end = static_cast<std::uint32_t>(boundary_.size());
    const bool known = count == 0 ? append_roots(boundary_) : append_dependents_of_frontier(record);
    if (!known) {
      boundary_.resize(record.frontier_begin);
      return false;
    }
    record.known_end = static_cast<std::uint32_t>(boundary_.size());
    return true;
  }

  bool append_dependents_of_frontier(const scope_record& record) {
    for (std::uint32_t i = record.frontier_begin; i < record.frontier_end; ++i) {
      if (!append_dependents(boundary_[i], boundary_)) {
        return false;
      }
    }
    return true;
  }

  /// Walks what the scope added: new dependents of its entry frontier (or new roots), and all
  /// that is reachable from them. Never throws: a scope that cannot be walked tags nothing.
  void close_scope(std::uint32_t index, std::uint64_t generation) noexcept {
    if (generation != generation_ || index >= scopes_.size() || !scopes_[index].open) {
      return;
    }
    scope_record& record = scopes_[index];
    record.open = false;
    if (logged()) {
      record.nodes_end = watch_.position();
      try {
        closed_.push_back(index);
      } catch (...) { // out of memory: this scope tags nothing
      }
      return;
    }
    record.nodes_begin = static_cast<std::uint32_t>(tagged_.size());
    record.nodes_end = record.nodes_begin;
    try {
      const auto known_begin = boundary_.begin() + record.frontier_end;
      const auto known_end = boundary_.begin() + record.known_end;
      const auto is_known = [&](cudaGraphNode_t node) {
        return std::find(known_begin, known_end, node) != known_end;
      };
      pending_.clear();
      visited_.clear();
      bool walked = true;
      if (record.frontier_begin == record.frontier_end) {
        walked = append_roots(pending_);
      } else {
        for (std::uint32_t i = record.frontier_begin; walked && i < record.frontier_end; ++i) {
          walked = append_dependents(boundary_[i], pending_);
        }
      }
      std::erase_if(pending_, is_known);
      while (walked && !pending_.empty()) {
        const cudaGraphNode_t node = pending_.back();
        pending_.pop_back();
        if (first_visit(node, record.nodes_begin)) {
          tagged_.push_back(node);
          walked = append_dependents(node, pending_);
        }
      }
      if (!walked) {
        tagged_.resize(record.nodes_begin);
        return;
      }
      record.nodes_end = static_cast<std::uint32_t>(tagged_.size());
      closed_.push_back(index);
    } catch (...) { // out of memory: this scope tags nothing
      tagged_.resize(record.nodes_begin);
    }
  }

  /// True if the walk that tags from `tagged_[from]` on has not met `node` yet. Most scopes add
  /// a few nodes: a linear search over them costs less than a hash set, which takes over (caught
  /// up with what was tagged so far) once a scope has tagged many.
  bool first_visit(cudaGraphNode_t node, std::uint32_t from) {
    constexpr std::size_t small_walk = 32;
    const auto walked = tagged_.begin() + from;
    const auto seen = static_cast<std::size_t>(tagged_.end() - walked);
    if (seen < small_walk) {
      return std::find(walked, tagged_.end(), node) == tagged_.end();
    }
    visited_.insert(walked + static_cast<std::ptrdiff_t>(visited_.size()), tagged_.end());
    return !visited_.contains(node);
  }

  /// Appends the current roots of the capture graph.
  bool append_roots(std::vector<cudaGraphNode_t>& out) {
    std::size_t count = 0;
    if (!queries_.roots(graph_, nullptr, count)) {
      return false;
    }
    if (count == 0) {
      return true;
    }
    const std::size_t old_size = out.size();
    out.resize(old_size + count);
    if (!queries_.roots(graph_, out.data() + old_size, count)) {
      out.resize(old_size);
      return false;
    }
    out.resize(old_size + std::min(count, out.size() - old_size));
    return true;
  }

  /// Appends the nodes that depend on `node`. Edge data is fetched too: without it CUDA refuses
  /// (cudaErrorLossyQuery) to list edges that carry some, e.g. programmatic launch edges. One
  /// call for the usual few dependents (CUDA fills what there is and says how many); a node with
  /// more is asked again for its count.
  bool append_dependents(cudaGraphNode_t node, std::vector<cudaGraphNode_t>& out) {
    constexpr std::size_t few = 8;
    std::array<cudaGraphNode_t, few> first{};
    std::array<cudaGraphEdgeData, few> first_edges{};
    std::size_t count = few;
    if (!queries_.dependents(node, first.data(), first_edges.data(), count)) {
      return false;
    }
    if (count < few) {
      out.insert(out.end(), first.begin(), first.begin() + static_cast<std::ptrdiff_t>(count));
      return true;
    }
    if (!queries_.dependents(node, nullptr, nullptr, count)) {
      return false;
    }
    const std::size_t old_size = out.size();
    out.resize(old_size + count);
    edge_scratch_.resize(count);
    if (!queries_.dependents(node, out.data() + old_size, edge_scratch_.data(), count)) {
      out.resize(old_size);
      return false;
    }
    out.resize(old_size + std::min(count, out.size() - old_size));
    return true;
  }

  /// One annotation per tagged node. A node's scopes, in the order they closed (innermost
  /// first), give its values, a key's first value winning; the nodes under the same scopes share
  /// one list of values. Nodes are keyed by creation index when logged (so the list comes out in
  /// creation order), by handle when walked.
  void merge_scopes() {
    if (logged() && merge_disjoint_scopes()) {
      return;
    }
    membership_.clear();
    const bool by_index = logged();
    for (std::uint32_t position = 0; position < closed_.size(); ++position) {
      const scope_record& record = scopes_[closed_[position]];
      for (std::uint32_t n = record.nodes_begin; n < record.nodes_end; ++n) {
        membership_.emplace_back(by_index ? n : reinterpret_cast<std::uintptr_t>(tagged_[n]),
                                 position);
      }
    }
    std::sort(membership_.begin(), membership_.end()); // by node, then innermost scope first
    std::vector<node_annotation> list;
    nodes_.clear();
    creation_indices_.clear();
    std::vector<annotation_values> of_scope(closed_.size());
    std::map<std::vector<std::uint32_t>, annotation_values> of_chain; // nodes in nested scopes
    std::vector<std::pair<std::uint32_t, annotation_values>> recent;  // see values_of_scope
    std::vector<std::uint32_t> chain;
    for (std::size_t i = 0; i < membership_.size();) {
      const std::uint64_t node = membership_[i].first;
      chain.clear();
      for (; i < membership_.size() && membership_[i].first == node; ++i) {
        chain.push_back(membership_[i].second);
      }
      annotation_values* values = nullptr;
      if (chain.size() == 1) {
        values = &of_scope[chain.front()];
        if (values->empty()) {
          *values = values_of_scope(chain.front(), recent);
        }
      } else {
        values = &of_chain[chain];
        if (values->empty()) {
          *values = annotation_values{entries_of(chain)};
        }
      }
      node_annotation& added = list.emplace_back();
      added.values = *values;
      if (by_index) {
        nodes_.push_back(watch_.log().nodes[node]);
        creation_indices_.push_back(static_cast<std::uint32_t>(node));
      } else {
        nodes_.push_back(reinterpret_cast<cudaGraphNode_t>(node)); // NOLINT: the key was a handle
      }
    }
    list_ = std::move(list);
  }

  /// merge_scopes for logged scopes that never overlap (each closed before the next opened: the
  /// usual run of regions), without sorting: each one's nodes are a run of the log, and the runs
  /// come in creation order. False, having done nothing, if any two overlap.
  bool merge_disjoint_scopes() {
    std::uint32_t covered = 0;
    std::size_t tagged = 0;
    for (const std::uint32_t index : closed_) {
      const scope_record& record = scopes_[index];
      if (record.nodes_begin < covered) {
        return false;
      }
      covered = record.nodes_end;
      tagged += record.nodes_end - record.nodes_begin;
    }
    const std::vector<CUgraphNode>& log = watch_.log().nodes;
    std::vector<node_annotation> list;
    list.reserve(tagged);
    nodes_.clear();
    nodes_.reserve(tagged);
    creation_indices_.clear();
    creation_indices_.reserve(tagged);
    std::vector<std::pair<std::uint32_t, annotation_values>> recent; // see values_of_scope
    for (std::uint32_t position = 0; position < closed_.size(); ++position) {
      const scope_record& record = scopes_[closed_[position]];
      if (record.nodes_begin == record.nodes_end) {
        continue;
      }
      const annotation_values values = values_of_scope(position, recent);
      for (std::uint32_t n = record.nodes_begin; n < record.nodes_end; ++n) {
        list.emplace_back().values = values;
        nodes_.push_back(log[n]);
        creation_indices_.push_back(n);
      }
    }
    list_ = std::move(list);
    return true;
  }

  /// The values of the scope at `position` (of closed_). Scopes often repeat their key/values
  /// (a name per layer): the last few distinct lists are reused, compared by content.
  [[nodiscard]] annotation_values
  values_of_scope(std::uint32_t position,
                  std::vector<std::pair<std::uint32_t, annotation_values>>& recent) const {
    constexpr std::size_t remembered = 8;
    const scope_record& record = scopes_[closed_[position]];
    const auto same_entries = [&](std::uint32_t other_position) {
      const scope_record& other = scopes_[closed_[other_position]];
      return std::equal(
          entries_.begin() + record.entries_begin, entries_.begin() + record.entries_end,
          entries_.begin() + other.entries_begin, entries_.begin() + other.entries_end);
    };
    for (const auto& [other_position, values] : recent) {
      if (same_entries(other_position)) {
        return values;
      }
    }
    annotation_values values{entries_of(std::vector<std::uint32_t>{position})};
    if (recent.size() == remembered) {
      recent.erase(recent.begin());
    }
    recent.emplace_back(position, values);
    return values;
  }

  /// The key/values of the scopes at `positions` (of closed_), in that order.
  [[nodiscard]] std::vector<annotation_values::value_type>
  entries_of(const std::vector<std::uint32_t>& positions) const {
    std::vector<annotation_values::value_type> pairs;
    for (const std::uint32_t position : positions) {
      const scope_record& record = scopes_[closed_[position]];
      for (std::uint32_t e = record.entries_begin; e < record.entries_end; ++e) {
        pairs.push_back(entries_[e]);
      }
    }
    return pairs;
  }

  void resolve_template_ids() {
    std::vector<node_annotation>& list = list_;
    if (source_ == node_id_source::cupti) {
      if (logged() ? ids_from_creation_indices() : ids_from_creation_order()) {
        if (!logged()) {
          sort_by_template_id(); // logged nodes came in creation order already
        }
        return;
      }
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      CUptiResult cupti = CUPTI_SUCCESS;
      list[i].template_id = detail::template_node_id(source_, nodes_[i], cupti);
      list[i].id = list[i].template_id; // until an executable exists
      if (cupti != CUPTI_SUCCESS) {
        // CUPTI was taken by another tool after the probe: degrade this capture, say so once.
        detail::notice_once(detail::id_source_reason(node_id_source::none, cupti));
        source_ = node_id_source::none;
        for (node_annotation& node : list) {
          node.template_id = 0;
          node.id = 0;
        }
        break;
      }
    }
    if (source_ != node_id_source::none) {
      sort_by_template_id();
    }
  }

  /// CUPTI's ids for every annotated node from one listing of the graph's nodes (creation order),
  /// instead of a cuptiGetGraphNodeId per node. nodes_ is sorted by handle (merge_scopes): joined
  /// with the graph's nodes sorted the same way. See ids_from_creation_indices.
  bool ids_from_creation_order() {
    std::size_t count = 0;
    if (list_.empty() || !queries_.nodes(graph_, nullptr, count)) {
      return false;
    }
    graph_nodes_.resize(count);
    if (!queries_.nodes(graph_, graph_nodes_.data(), count)) {
      return false;
    }
    creation_index_.resize(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      creation_index_[i] = {graph_nodes_[i], i};
    }
    std::sort(creation_index_.begin(), creation_index_.end());
    creation_indices_.clear();
    auto next = creation_index_.begin();
    for (const cudaGraphNode_t node : nodes_) {
      next = std::lower_bound(next, creation_index_.end(), std::pair{node, std::uint32_t{0}});
      if (next == creation_index_.end() || next->first != node) {
        return false;
      }
      creation_indices_.push_back(next->second);
    }
    return ids_from_creation_indices();
  }

  /// Every annotated node's id from its creation index (creation_indices_: its place in the
  /// creation log, or in the graph's listing) and the graph's id,
  /// with one CUPTI call: the last node's id, whose upper half is the graph's id and whose lower
  /// half must be that node's index (the rule is observed, not documented:
  /// detail::template_node_id_at; a different rule, or a creation log that missed a node, shows
  /// there as anywhere). False (the caller asks node by node) on a mismatch or a failure.
  bool ids_from_creation_indices() {
    std::uint64_t last = 0;
    if (list_.empty() || cuptiGetGraphNodeId(nodes_.back(), &last) != CUPTI_SUCCESS) {
      return false;
    }
    const auto graph_id = static_cast<std::uint32_t>(last >> 32U);
    if (detail::template_node_id_at(graph_id, creation_indices_.back()) != last) {
      return false;
    }
    for (std::size_t i = 0; i < list_.size(); ++i) {
      list_[i].template_id = detail::template_node_id_at(graph_id, creation_indices_[i]);
      list_[i].id = list_[i].template_id; // until an executable exists
    }
    return true;
  }

  /// In node creation order: by template id.
  void sort_by_template_id() {
    std::vector<node_annotation>& list = list_;
    order_.resize(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      order_[i] = {list[i].template_id, i};
    }
    std::sort(order_.begin(), order_.end());
    std::vector<node_annotation> sorted_list;
    std::vector<cudaGraphNode_t> sorted_nodes;
    sorted_list.reserve(list.size());
    sorted_nodes.reserve(list.size());
    for (const auto& [id, i] : order_) {
      sorted_list.push_back(std::move(list[i]));
      sorted_nodes.push_back(nodes_[i]);
    }
    list = std::move(sorted_list);
    nodes_ = std::move(sorted_nodes);
  }

  static bool by_id(const node_annotation& a, const node_annotation& b) noexcept {
    return a.id < b.id;
  }

  /// Drops the per-scope bookkeeping; keeps the vectors' capacity for the next capture. Live
  /// markers of this capture become inert.
  void release_scopes() noexcept {
    ++generation_;
    scopes_.clear();
    entries_.clear();
    boundary_.clear();
    tagged_.clear();
    closed_.clear();
    pending_.clear();
    visited_.clear();
    membership_.clear();
    creation_indices_.clear();
    graph_nodes_.clear();
    creation_index_.clear();
    graph_ = nullptr;
  }

  void clear_capture() noexcept {
    release_scopes();
    nodes_.clear();
  }

  // What the user gets.
  std::vector<node_annotation> list_;
  std::vector<cudaGraphNode_t> nodes_; // template nodes of list_, until after_capture_end
  node_id_source source_ = node_id_source::none;
  node_discovery discovery_ = node_discovery::graph_walk;
  // The capture in progress.
  bool capturing_ = false;
  unsigned long long capture_id_ = 0;
  cudaStream_t capture_stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  std::uint64_t generation_ = 1; // a marker of an earlier capture must not close a new scope
  std::vector<scope_record> scopes_;
  std::vector<std::pair<std::string, std::string>> entries_;
  std::vector<cudaGraphNode_t> boundary_;
  std::vector<cudaGraphNode_t> tagged_;
  std::vector<std::uint32_t> closed_;
  // Scratch space, kept between scopes and captures.
  std::vector<cudaGraphNode_t> pending_;
  std::unordered_set<cudaGraphNode_t> visited_;
  std::vector<cudaGraphEdgeData> edge_scratch_;
  detail::graph_queries queries_; // through the driver where it can
  detail::creation_watch watch_;  // creation_callbacks: CUPTI's subscriber (shared), the log
  std::vector<std::pair<std::uint64_t, std::uint32_t>> membership_; // (node key, closed position)
  std::vector<std::uint32_t> creation_indices_;                     // of each of nodes_
  std::vector<std::pair<std::uint64_t, std::size_t>> order_;        // (template id, index)
  std::vector<cudaGraphNode_t> graph_nodes_;
  std::vector<std::pair<cudaGraphNode_t, std::uint32_t>> creation_index_; // (node, index)
};

static_assert(annotation_policy<on>);

} // namespace annot

// ---- traces
// ----------------------------------------------------------------------------------------

/// One kernel execution, as CUPTI's activity records report it.
struct kernel_record {
  std::string name;           ///< the kernel's (mangled) name
  std::uint64_t start_ns = 0; ///< GPU timestamps, nanoseconds
  std::uint64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint64_t graph_node_id = 0; ///< the replayed node's id; 0: not launched from a graph
  std::uint32_t graph_id = 0;      ///< the executable graph's id (0: not from a graph)
};

namespace detail {

/// Where CUPTI's activity buffers land while a trace_recorder runs (CUPTI calls back on its own
/// thread, into plain functions: this is their only state).
struct activity_sink {
  std::mutex mutex;
  std::vector<kernel_record> records;
  bool callbacks_registered = false;
  std::atomic<bool> recording{false};
};

inline activity_sink& sink() {
  static activity_sink instance;
  return instance;
}

inline constexpr std::size_t activity_buffer_bytes = std::size_t{4} << 20U;
inline constexpr std::size_t activity_buffer_alignment = 8;

inline void CUPTIAPI activity_buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                               std::size_t* max_records) {
  // NOLINTNEXTLINE: CUPTI owns the buffer until it hands it back to activity_buffer_completed
  *buffer = static_cast<std::uint8_t*>(
      std::aligned_alloc(activity_buffer_alignment, activity_buffer_bytes));
  *size = *buffer == nullptr ? 0 : activity_buffer_bytes;
  *max_records = 0;
}

inline void CUPTIAPI activity_buffer_completed(CUcontext /*context*/, std::uint32_t /*stream*/,
                                               std::uint8_t* buffer, std::size_t /*size*/,
                                               std::size_t valid_size) {
  try {
    std::vector<kernel_record> kernels;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
        continue;
      }
      // NOLINTNEXTLINE: CUPTI's records are told apart by their kind
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      kernels.push_back({.name = kernel->name != nullptr ? kernel->name : "",
                         .start_ns = kernel->start,
                         .end_ns = kernel->end,
                         .device = kernel->deviceId,
                         .stream = kernel->streamId,
                         .graph_node_id = kernel->graphNodeId,
                         .graph_id = kernel->graphId});
    }
    activity_sink& target = sink();
    const std::lock_guard lock{target.mutex};
    target.records.insert(target.records.end(), kernels.begin(), kernels.end());
  } catch (...) { // on CUPTI's thread: nothing may escape; the trace lacks this buffer
  }
  std::free(buffer); // NOLINT: from aligned_alloc above
}

/// The lane a kernel goes to: its region's name (or its key/values), else where it came from.
inline std::string lane_of(const kernel_record& kernel, const node_annotation* annotation) {
  if (annotation != nullptr && !annotation->values.empty()) {
    if (!annotation->name().empty()) {
      return std::string{annotation->name()};
    }
    std::string lane;
    for (const auto& [key, value] : annotation->values) {
      lane.append(lane.empty() ? "" : ", ").append(key).append("=").append(value);
    }
    return lane;
  }
  if (kernel.graph_node_id != 0) {
    return "graph (unannotated)";
  }
  return "stream " + std::to_string(kernel.stream);
}

} // namespace detail

/// Writes `kernels` as a Chrome trace (JSON; opens in Perfetto and chrome://tracing): one lane
/// (thread) per annotation name, the kernel's annotation in its args. Kernels of one name that
/// overlap in time (parallel branches) get lanes of their own, "attention (2)", since a lane's
/// slices must nest. Times start at 0 us.
inline void write_chrome_trace(std::ostream& out, const std::vector<kernel_record>& kernels,
                               const std::vector<node_annotation>& annotations) {
  std::unordered_map<std::uint64_t, const node_annotation*> by_id;
  for (const node_annotation& node : annotations) {
    if (node.id != 0) {
      by_id.emplace(node.id, &node);
    }
  }
  std::vector<const kernel_record*> order;
  order.reserve(kernels.size());
  for (const kernel_record& kernel : kernels) {
    order.push_back(&kernel);
  }
  std::stable_sort(order.begin(), order.end(), [](const kernel_record* a, const kernel_record* b) {
    return a->start_ns < b->start_ns;
  });
  const std::uint64_t origin = order.empty() ? 0 : order.front()->start_ns;
  struct lane {
    std::uint32_t device;
    std::string base;  // the annotation's name
    std::string title; // base, or "base (k)" for the k-th parallel lane of that name
    std::uint64_t busy_until;
  };
  std::vector<lane> lanes; // tid = index + 1, in order of first use
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  const char* separator = "\n";
  for (const kernel_record* kernel : order) {
    const auto found = kernel->graph_node_id != 0 ? by_id.find(kernel->graph_node_id) : by_id.end();
    const node_annotation* annotation = found != by_id.end() ? found->second : nullptr;
    std::string base = detail::lane_of(*kernel, annotation);
    std::size_t tid = 0;
    std::size_t same_name = 0;
    for (; tid < lanes.size(); ++tid) {
      if (lanes[tid].device == kernel->device && lanes[tid].base == base) {
        ++same_name;
        if (lanes[tid].busy_until <= kernel->start_ns) {
          break;
        }
      }
    }
    if (tid == lanes.size()) {
      std::string title = same_name == 0 ? base : base + " (" + std::to_string(same_name + 1) + ")";
      lanes.push_back({kernel->device, std::move(base), std::move(title), 0});
    }
    lanes[tid].busy_until = std::max(lanes[tid].busy_until, kernel->end_ns);
    out << separator << "{\"name\": ";
    detail::write_json_string(out, detail::demangled(kernel->name.c_str()));
    out << ", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": " << kernel->device
        << ", \"tid\": " << tid + 1 << ", \"ts\": ";
    detail::write_microseconds(out, kernel->start_ns - origin);
    out << ", \"dur\": ";
    detail::write_microseconds(
        out, kernel->end_ns >= kernel->start_ns ? kernel->end_ns - kernel->start_ns : 0);
    out << ", \"args\": {\"graph node id\": " << kernel->graph_node_id
        << ", \"stream\": " << kernel->stream;
    if (annotation != nullptr) {
      for (const auto& [key, value] : annotation->values) {
        out << ", ";
        detail::write_json_string(out, key);
        out << ": ";
        detail::write_json_string(out, value);
      }
    }
    out << "}}";
    separator = ",\n";
  }
  std::unordered_set<std::uint32_t> named_devices;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const std::uint32_t device = lanes[i].device;
    if (named_devices.insert(device).second) {
      out << separator << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << device
          << ", \"args\": {\"name\": \"GPU " << device << "\"}}";
      separator = ",\n";
    }
    out << separator << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << device
        << ", \"tid\": " << i + 1 << ", \"args\": {\"name\": ";
    detail::write_json_string(out, lanes[i].title);
    out << "}},\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": " << device
        << ", \"tid\": " << i + 1 << ", \"args\": {\"sort_index\": " << i + 1 << "}}";
  }
  out << "\n]}\n";
}

/// Collects CUPTI's kernel activity from construction to stop(): replay annotated graphs in
/// between, then write_chrome_trace(). One recorder at a time per process. Where CUPTI is held
/// by another tool (or absent) the recorder is unavailable: it records nothing, says so once,
/// and never throws for that reason.
class trace_recorder {
public:
  trace_recorder() {
    detail::activity_sink& target = detail::sink();
    if (target.recording.exchange(true)) {
      throw state_error("graphcap: a trace_recorder is already recording in this process; stop() "
                        "or destroy it before starting another");
    }
    owns_recording_ = true;
    const CUptiResult probe = detail::cupti_probe();
    if (probe != CUPTI_SUCCESS) {
      unavailable(probe);
      return;
    }
    {
      const std::lock_guard lock{target.mutex};
      target.records.clear();
      if (!target.callbacks_registered) {
        const CUptiResult registered = cuptiActivityRegisterCallbacks(
            detail::activity_buffer_requested, detail::activity_buffer_completed);
        if (registered != CUPTI_SUCCESS) {
          unavailable(registered);
          return;
        }
        target.callbacks_registered = true;
      }
    }
    const CUptiResult enabled = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (enabled != CUPTI_SUCCESS) {
      unavailable(enabled);
      return;
    }
    recording_ = true;
  }

  trace_recorder(const trace_recorder&) = delete;
  trace_recorder& operator=(const trace_recorder&) = delete;
  trace_recorder(trace_recorder&&) = delete;
  trace_recorder& operator=(trace_recorder&&) = delete;

  ~trace_recorder() {
    try {
      stop();
    } catch (...) { // a destructor never throws; stop() explicitly to see failures
    }
    release();
  }

  /// False where CUPTI cannot record (held by another tool); reason() says why.
  [[nodiscard]] bool available() const noexcept { return reason_.empty(); }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

  /// Waits for the device (cudaDeviceSynchronize: not during a capture), stops recording and
  /// collects what CUPTI buffered. Idempotent.
  void stop() {
    if (!recording_) {
      return;
    }
    recording_ = false;
    const cudaError_t synced = cudaDeviceSynchronize();
    static_cast<void>(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    static_cast<void>(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    {
      detail::activity_sink& target = detail::sink();
      const std::lock_guard lock{target.mutex};
      kernels_ = std::move(target.records);
      target.records.clear();
    }
    std::sort(kernels_.begin(), kernels_.end(), [](const kernel_record& a, const kernel_record& b) {
      return a.start_ns < b.start_ns;
    });
    release();
    detail::check(synced, "cudaDeviceSynchronize (trace_recorder::stop)");
  }

  /// The kernels recorded (after stop()), by start time.
  [[nodiscard]] const std::vector<kernel_record>& kernels() const noexcept { return kernels_; }

  /// Writes the recorded kernels as a Chrome trace, in lanes named by the annotations recorded
  /// so far (recorded_annotations()). Stops first if still recording.
  void write_chrome_trace(const std::string& path) {
    stop();
    std::ofstream file;
    detail::open_for_writing(file, path, "the trace");
    graphcap::write_chrome_trace(file, kernels_, recorded_annotations());
    if (!file.flush()) {
      throw error("graphcap: writing the trace to '" + path + "' failed (disk full?)");
    }
  }

private:
  void unavailable(CUptiResult result) {
    reason_ = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                  ? "CUPTI is held by another tool (compute-sanitizer, Nsight Systems or Compute, "
                    "cuda-gdb): " +
                        detail::cupti_result_name(result) + "; no trace is recorded"
                  : "CUPTI cannot record activity: " + detail::cupti_result_name(result) +
                        "; no trace is recorded";
    detail::notice_once(reason_);
    release();
  }

  void release() noexcept {
    if (owns_recording_) {
      owns_recording_ = false;
      detail::sink().recording.store(false);
    }
  }

  std::vector<kernel_record> kernels_;
  std::string reason_;
  bool recording_ = false;
  bool owns_recording_ = false;
};

} // namespace graphcap
