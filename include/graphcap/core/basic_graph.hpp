// graphcap/core/basic_graph.hpp - a CUDA graph captured from stream work and replayed, with its
// optional features chosen by four policies; and lean_graph, the one with every feature off.
// This is the lean core: it includes the policy concepts and the "off" policies only.
//
//   basic_graph<Mode, Pool, Annot, Liveness>
//
// Lifecycle: empty -> capturing -> captured -> instantiated -> (reset) -> empty.
//  - capture(f) / begin_capture(): record the work issued on the capture stream;
//  - at the end the template is instantiated (or, with graphcap::keep_graph, kept for explicit
//    instantiate(), editing and debug_dump, and instantiated lazily by the first replay);
//  - replay(stream) launches the executable graph on any stream, the default stream too;
//  - reset() drops everything; the graph can capture again.
//
// Each policy is stored with [[no_unique_address]] and called through the hooks of
// core/policy.hpp; an "off" policy is an empty type with empty inline hooks, so it leaves
// no byte, branch or call behind. The CUDA calls themselves are issued inline.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/annot_off.hpp>
#include <graphcap/core/detail/capture.hpp>
#include <graphcap/core/detail/graph_lifecycle.hpp>
#include <graphcap/core/liveness_off.hpp>
#include <graphcap/core/mode.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/pool_off.hpp>
#include <graphcap/core/scope.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {
namespace detail {
struct policy_access;
} // namespace detail

/// A CUDA graph captured from stream work and replayed with one launch, its optional features
/// chosen by four policies: Mode (the cudaStreamCaptureMode), Pool (memory allocated during the
/// capture), Annot (named scopes tagging nodes) and Liveness (inputs checked before each
/// replay). Policies that are off leave no member, branch or call behind. Move-only.
template <capture_mode Mode, pool_strategy Pool, annotation_policy Annot, liveness_policy Liveness>
class basic_graph {
public:
  using mode_type = Mode;         ///< the capture mode (graphcap::mode)
  using pool_type = Pool;         ///< where capture-time memory lives (graphcap::pool)
  using annot_type = Annot;       ///< annotations (graphcap::annot)
  using liveness_type = Liveness; ///< the input liveness check (graphcap::liveness)
  /// The capture in progress (what begin_capture() returns and capture(work) hands `work`).
  using scope = basic_scope<basic_graph, capture_kind::fresh>;
  /// The capture of a recapture: its end() updates the executable graph in place.
  using recapture_scope = basic_scope<basic_graph, capture_kind::update>;
  /// Deprecated in 0.5, removed in 0.6: graphcap::body_scope<Graph> (<graphcap/fwd.hpp>).
  using body_scope
      [[deprecated("graphcap: Graph::body_scope is now graphcap::body_scope<Graph>")]] =
          graphcap::body_scope<basic_graph>;

  /// An empty graph. Makes no CUDA call: the first capture does.
  basic_graph() noexcept = default;
  /// An empty graph that keeps its template after instantiation (see keep_graph_t).
  explicit basic_graph(keep_graph_t /*keep*/) noexcept : lifecycle_(true) {}

  /// An empty graph drawing from the pool behind `pool` (graph_pool_handle(), or another
  /// graph's pool()). For pool::shared (and pool::private_pool, which then shares it).
  explicit basic_graph(
      const pool_handle& pool) requires std::constructible_from<Pool, const pool_handle&>
      : lifecycle_(false, pool) {}
  /// The same, keeping the template (keep_graph).
  basic_graph(keep_graph_t /*keep*/,
              const pool_handle& pool) requires std::constructible_from<Pool, const pool_handle&>
      : lifecycle_(true, pool) {}

  /// An empty graph whose slabs come from `memory_pool`, which must outlive it. For pool::user.
  explicit basic_graph(
      cudaMemPool_t memory_pool) requires std::constructible_from<Pool, cudaMemPool_t>
      : lifecycle_(false, memory_pool) {}
  /// The same, keeping the template (keep_graph).
  basic_graph(keep_graph_t /*keep*/,
              cudaMemPool_t memory_pool) requires std::constructible_from<Pool, cudaMemPool_t>
      : lifecycle_(true, memory_pool) {}

  /// Takes `other`'s capture; `other` is left empty.
  basic_graph(basic_graph&& other) noexcept = default;
  /// Drops this graph's capture (as reset() does), then takes `other`'s.
  basic_graph& operator=(basic_graph&& other) noexcept = default;
  basic_graph(const basic_graph&) = delete;
  basic_graph& operator=(const basic_graph&) = delete;

  /// Destroys the executable graph, the template and the side stream; never throws. A capture
  /// scope must not outlive its graph (as an iterator must not outlive its container).
  ~basic_graph() = default;

  // ---- capture ---------------------------------------------------------------------------

  /// Begins capturing on `stream` (any stream but the legacy default one) and returns the scope
  /// that ends it. scope::end() finishes the capture; a scope destroyed before end() (an
  /// exception) ends and discards the capture, leaving the stream not capturing.
  /// \throws state_error unless the graph is empty, or from a policy (a sleeping pool);
  /// capture_error for the legacy default stream or a refused cudaStreamBeginCapture; cuda_error.
  /// \post capturing; on a throw the graph is still empty and no stream is left capturing.
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] scope
  begin_capture(stream_ref stream) {
    return scope{lifecycle_, lifecycle_.begin(&stream), {}};
  }

  /// Begins capturing on the graph's own non-blocking side stream (created on first use, on the
  /// current device). Nothing runs during a capture, so the side stream needs no ordering with
  /// your other work: replay(stream) orders the graph's work on the stream you replay it on.
  /// \throws as begin_capture(stream), and cuda_error if the side stream cannot be made.
  /// \post as begin_capture(stream).
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] scope
  begin_capture() {
    return scope{lifecycle_, lifecycle_.begin(nullptr), {}};
  }

  /// Captures what `work` issues on the graph's side stream. `work` takes the capture scope
  /// (`scope&` or `auto&`), the capture stream (`cudaStream_t`), or nothing. Returns what `work`
  /// returns. If `work` throws, the capture is ended and discarded and the exception propagates
  /// unchanged. The scope `work` is given ends with capture(): a pointer to it kept past the
  /// call dangles (docs/errors.md).
  /// \throws as begin_capture(); what `work` throws; capture_error if the capture was
  /// invalidated or left forks unjoined; cuda_error (instantiation); out_of_memory_error (pool).
  /// \post instantiated (captured with keep_graph); on a throw empty, no stream capturing.
  template <class Work>
  decltype(auto) capture(Work&& work) {
    return scope::run(begin_capture(), std::forward<Work>(work));
  }

  /// Captures what `work` issues on `stream` (see capture(work)).
  /// \throws as capture(work) and begin_capture(stream). \post as capture(work).
  template <class Work>
  decltype(auto) capture(stream_ref stream, Work&& work) {
    return scope::run(begin_capture(stream), std::forward<Work>(work));
  }

  // ---- capture again, updating the executable graph in place --------------------------

  /// Captures `work` again (as capture(work) does) and makes the executable graph match it:
  /// updated in place with cudaGraphExecUpdate when CUDA allows (same topology, node types and
  /// kernel functions; parameters and addresses may change), instantiated anew otherwise. The
  /// result says which happened and why. The graph's pool hands the new capture the blocks of
  /// the old one in the same order, so the same allocations get the same addresses. A refusal (a
  /// capture in progress, a stream that cannot capture or captures already, a policy's, such as
  /// a sleeping pool's) comes before anything is released: the graph is as before. If `work`
  /// throws or the capture fails, the graph is left empty, as after any failed capture. Returns
  /// the update_result; what `work` returns is dropped (use begin_recapture() to keep it).
  /// \throws state_error during a capture or from a policy; capture_error for a stream that
  /// cannot capture or captures already; then what capture(work) throws.
  /// \post instantiated; on a refusal as before; on a later throw empty, no stream capturing.
  template <class Work>
  update_result recapture(Work&& work) {
    return recapture_scope::run(begin_recapture(), std::forward<Work>(work));
  }

  /// Captures `work` again on `stream` (see recapture(work)).
  /// \throws as recapture(work). \post as recapture(work).
  template <class Work>
  update_result recapture(stream_ref stream, Work&& work) {
    return recapture_scope::run(begin_recapture(stream), std::forward<Work>(work));
  }

  /// The RAII form of recapture(): begins a capture whose end() updates the executable graph
  /// (update() on the scope tells how). On an empty graph it is a first capture.
  /// \throws the refusals of recapture(work); capture_error if the capture cannot begin.
  /// \post capturing; after a refusal the graph is as before, after a later throw empty.
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] recapture_scope
  begin_recapture(stream_ref stream) {
    capture_kind::update kind{};
    const cudaStream_t capturing = lifecycle_.begin_recapture(&stream, kind.previous);
    return recapture_scope{lifecycle_, capturing, std::move(kind)};
  }

  /// The same, on the graph's own side stream.
  /// \throws as begin_recapture(stream); cuda_error if the side stream cannot be made.
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] recapture_scope
  begin_recapture() {
    capture_kind::update kind{};
    const cudaStream_t capturing = lifecycle_.begin_recapture(nullptr, kind.previous);
    return recapture_scope{lifecycle_, capturing, std::move(kind)};
  }

  // ---- instantiate and replay ---------------------------------------------------------

  /// Instantiates the captured template. Without keep_graph this already happened at the end of
  /// the capture, and calling it again is a state_error; with keep_graph it (re)instantiates
  /// from the current template, e.g. after you edited raw_graph().
  /// \throws state_error without a template, or instantiated without keep_graph; cuda_error
  /// if CUDA refuses the template. \post instantiated; after a cuda_error captured, no executable.
  void instantiate() { lifecycle_.instantiate(); }

  /// Launches the graph on `stream` (any stream of the capture's device, the default stream
  /// too). On the success path this is the hand-written sequence: the policies' pre-replay
  /// checks (none when they are off) and one cudaGraphLaunch. Misuse (no executable graph yet)
  /// is diagnosed only after the launch failed, so it costs nothing when all is well.
  /// \throws liveness_error (an input was freed: nothing launched); state_error with nothing to
  /// launch or a sleeping pool; cuda_error if the launch (or a lazy instantiation) fails.
  /// \post the graph is as before (keep_graph: instantiated, if it was captured).
  void replay(stream_ref stream = {}) { lifecycle_.replay(stream.get()); }

  /// Takes `from`'s executable graph, updated in place from this graph's template
  /// (cudaGraphExecUpdate): two captures of one topology then share one executable, and
  /// switching between them costs an update, not an instantiation (graph_family's
  /// one-executable mode). This graph needs its template (keep_graph, a finished capture) and
  /// `from` an executable graph (state_error otherwise). Updated: this graph replays the shared
  /// executable (its own previous one is destroyed), `from` keeps its template and no
  /// executable (its next replay instantiates one, or it takes one back). Refused (another
  /// topology, node type or kind of memory): nothing changes, and the result says why
  /// (update_outcome::refused).
  /// \throws state_error as above; cuda_error if cudaGraphExecUpdate fails other than refusing.
  /// \post updated: this graph instantiated, `from` captured; refused: both as before.
  update_result take_executable(basic_graph& from) {
    return lifecycle_.take_executable(from.lifecycle_);
  }

  /// Uploads the executable graph to the device ahead of its first replay (cudaGraphUpload), so
  /// the first replay costs what later ones do. Instantiates first under keep_graph.
  /// \throws state_error with nothing to upload; cuda_error from cudaGraphUpload or instantiation.
  void upload(stream_ref stream = {}) { lifecycle_.upload(stream.get()); }

  /// Destroys the executable graph and keeps the template (keep_graph; state_error otherwise,
  /// or during a capture): the next replay, upload() or instantiate() instantiates it again.
  /// What the driver does with the executable's memory: docs/families.md (it keeps it).
  /// \throws state_error during a capture or without keep_graph.
  /// \post captured (template kept, no executable); on a throw the graph is as before.
  void release_executable() { lifecycle_.release_executable(); }

  /// Drops the executable graph and the template (the graph's side stream is kept for the next
  /// capture). Not allowed while a capture scope is open.
  /// \throws state_error while a capture scope is open.
  /// \post empty (the side stream stays); on a throw the graph is as before.
  void reset() { lifecycle_.reset(); }

  // ---- inspection ---------------------------------------------------------------------

  /// Where the graph is in its lifecycle.
  [[nodiscard]] graph_state state() const noexcept { return lifecycle_.core().state; }
  /// True when the graph holds no capture (new, reset, or after a failed capture).
  [[nodiscard]] bool empty() const noexcept {
    return lifecycle_.core().state == graph_state::empty;
  }
  /// True when the graph was constructed with keep_graph.
  [[nodiscard]] bool keeps_graph() const noexcept { return lifecycle_.core().keep_graph; }
  /// Nodes in the captured graph (0 for an empty capture, which is valid and replays as a
  /// no-op: it usually means the work went to another stream than the capture stream). Counted
  /// at the first call after each capture (one cudaGraphGetNodes on the template, which the
  /// graph keeps for that even without keep_graph), not at the capture's end; cuda_error if
  /// CUDA cannot count. Like the graph's other members, not for concurrent calls.
  /// \throws cuda_error if cudaGraphGetNodes fails. \post the graph is as before.
  [[nodiscard]] std::size_t node_count() const { return lifecycle_.core().nodes(); }
  /// Changes at the end of every capture and recapture (it counts them, modulo 2^16): what a
  /// cache built from the graph (replay_loop) compares to know it is stale.
  [[nodiscard]] std::uint16_t generation() const noexcept { return lifecycle_.core().generation; }
  /// The device that was current when the capture began (-1 before the first capture).
  [[nodiscard]] int device() const noexcept { return lifecycle_.core().device; }

  /// The captured template. Exists after the capture with keep_graph (or before instantiation);
  /// the graph keeps ownership. Editing it takes effect at the next instantiate().
  /// \throws state_error without a template or without keep_graph.
  [[nodiscard]] cudaGraph_t raw_graph() const {
    return lifecycle_.core().template_graph("raw_graph()");
  }
  /// The executable graph; the graph keeps ownership. \throws state_error without one.
  [[nodiscard]] cudaGraphExec_t raw_exec() const { return lifecycle_.core().executable(); }
  /// Writes the template as a Graphviz DOT file (cudaGraphDebugDotPrint). Needs the template:
  /// construct the graph with keep_graph.
  /// \throws state_error without the template; cuda_error if cudaGraphDebugDotPrint fails.
  void debug_dump(const std::string& path, bool verbose = true) const {
    lifecycle_.core().debug_dump(path, verbose);
  }

  /// A handle to the graph's pool, for other graphs to share it
  /// (`graph_with<pool::shared> next{first.pool()};`). Needs a slab pool: pool::private_pool,
  /// pool::shared or pool::user.
  template <class P = Pool>
  [[nodiscard]] auto pool() { // -> pool_handle (auto: the lean core does not include it)
    static_assert(
        P::has_handle,
        "graphcap: pool() needs a graph whose pool can be shared: use " GRAPHCAP_SLAB_POOLS
        ", not pool::off or "
        "pool::graph_memory_nodes");
    return lifecycle_.pool().handle();
  }

  /// What the graph's pool holds (reserved and in-use bytes, slabs, blocks).
  template <class P = Pool>
  [[nodiscard]] auto pool_statistics() const { // -> graphcap::pool_statistics
    static_assert(
        P::has_handle,
        "graphcap: pool_statistics() needs a graph with a slab pool: " GRAPHCAP_SLAB_POOLS);
    if constexpr (P::has_handle) { // without one: the error above, and no other
      return lifecycle_.pool().statistics();
    }
  }

  /// The Pool policy's state, read-only (its hooks are the graph's to call).
  [[nodiscard]] const Pool& pool_policy() const noexcept { return lifecycle_.pool(); }
  /// The Annot policy's state, read-only (annot::on: id_source(), discovery(), ...).
  [[nodiscard]] const Annot& annot_policy() const noexcept { return lifecycle_.annot(); }
  /// The Liveness policy's state, read-only (liveness::check: input_count()).
  [[nodiscard]] const Liveness& liveness_policy() const noexcept { return lifecycle_.liveness(); }

  /// The annotated nodes of the last capture. Needs an Annot policy that records them
  /// (annot::on, from <graphcap/annotations.hpp>).
  template <class A = Annot>
  [[nodiscard]] decltype(auto) annotations() const {
    static_assert(annotation_with_records<A>,
                  "graphcap: annotations() needs a graph with annotations on: use annot::on "
                  "(#include <graphcap/annotations.hpp>, link graphcap::annotations)");
    return lifecycle_.annot().annotations();
  }

private:
  friend struct detail::policy_access;

  detail::graph_lifecycle<Mode, Pool, Annot, Liveness> lifecycle_;
};

namespace detail {
/// Mutable access to a graph's policies and two lifecycle steps, behind the key (only a
/// core_extension makes one): for the wings that hook into a graph, each from a class of its
/// own that derives from core_extension (liveness's declared inputs, the rebinders, a piecewise
/// graph and its bridges, a family's executable groups). Users get the read-only
/// pool_policy(), annot_policy() and liveness_policy(), and the wings' public functions.
struct policy_access {
  template <class Graph>
  static auto& pool(Graph& graph, policy_key key) noexcept {
    return graph.lifecycle_.pool(key);
  }
  template <class Graph>
  static auto& annot(Graph& graph, policy_key key) noexcept {
    return graph.lifecycle_.annot(key);
  }
  template <class Graph>
  static auto& liveness(Graph& graph, policy_key key) noexcept {
    return graph.lifecycle_.liveness(key);
  }
  /// graph.take_executable(from) where the caller made `from`'s executable match `graph`'s
  /// template itself (graph_family's patch switch): no cudaGraphExecUpdate.
  template <class Graph>
  static void take_matched_executable(Graph& graph, Graph& from, policy_key key) {
    graph.lifecycle_.take_matched_executable(key, from.lifecycle_);
  }
  /// graph.replay(stream) without its Liveness check, which the caller made already.
  template <class Graph>
  static void replay_checked(Graph& graph, cudaStream_t stream, policy_key key) {
    graph.lifecycle_.replay_checked(key, stream);
  }
};
} // namespace detail

/// Every optional feature off: global capture mode, no pool, no annotations, no liveness check.
/// Replay is exactly one cudaGraphLaunch and its error check.
using lean_graph = basic_graph<mode::global, pool::off, annot::off, liveness::off>;

} // namespace graphcap
