// graphcap/basic_graph.hpp - a CUDA graph captured from stream work and replayed, with its
// optional features chosen by four policies.
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
// Each policy is stored with [[no_unique_address]] and called through hooks at fixed points of
// that lifecycle; an "off" policy is an empty type with empty inline hooks, so it leaves no byte,
// branch or call behind. The CUDA calls themselves are issued inline.
#pragma once

#include <graphcap/buffer.hpp>
#include <graphcap/detail/capture_mode_guard.hpp>
#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/policies/annot.hpp>
#include <graphcap/policies/liveness.hpp>
#include <graphcap/policies/mode.hpp>
#include <graphcap/policies/pool.hpp>
#include <graphcap/pool_handle.hpp>
#include <graphcap/stream.hpp>
#include <graphcap/update.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {

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
/// destroyed as soon as the executable graph exists.
struct keep_graph_t {
  explicit keep_graph_t() = default;
};
inline constexpr keep_graph_t keep_graph{};

template <capture_mode Mode, pool_strategy Pool, annotation_policy Annot, liveness_policy Liveness>
class basic_graph {
public:
  using mode_type = Mode;
  using pool_type = Pool;
  using annot_type = Annot;
  using liveness_type = Liveness;

  class scope;
  class recapture_scope;

  /// An empty graph. Makes no CUDA call: the first capture does.
  basic_graph() noexcept = default;
  /// An empty graph that keeps its template after instantiation (see keep_graph_t).
  explicit basic_graph(keep_graph_t /*keep*/) noexcept : keep_graph_(true) {}

  /// An empty graph drawing from the pool behind `pool` (graph_pool_handle(), or another
  /// graph's pool()). For pool::shared (and pool::private_pool, which then shares it).
  explicit basic_graph(
      const pool_handle& pool) requires std::constructible_from<Pool, const pool_handle&>
      : pool_(pool) {}
  basic_graph(keep_graph_t /*keep*/,
              const pool_handle& pool) requires std::constructible_from<Pool, const pool_handle&>
      : keep_graph_(true), pool_(pool) {}

  /// An empty graph whose slabs come from `memory_pool`, which must outlive it. For pool::user.
  explicit basic_graph(
      cudaMemPool_t memory_pool) requires std::constructible_from<Pool, cudaMemPool_t>
      : pool_(memory_pool) {}
  basic_graph(keep_graph_t /*keep*/,
              cudaMemPool_t memory_pool) requires std::constructible_from<Pool, cudaMemPool_t>
      : keep_graph_(true), pool_(memory_pool) {}

  basic_graph(basic_graph&& other) noexcept
      : graph_(std::move(other.graph_)), exec_(std::move(other.exec_)),
        side_stream_(std::move(other.side_stream_)), device_(other.device_),
        node_count_(std::exchange(other.node_count_, 0)),
        state_(std::exchange(other.state_, graph_state::empty)), keep_graph_(other.keep_graph_),
        pool_(std::move(other.pool_)), annot_(std::move(other.annot_)),
        liveness_(std::move(other.liveness_)) {}

  basic_graph& operator=(basic_graph&& other) noexcept {
    if (this != &other) {
      release();
      graph_ = std::move(other.graph_);
      exec_ = std::move(other.exec_);
      side_stream_ = std::move(other.side_stream_);
      device_ = other.device_;
      node_count_ = std::exchange(other.node_count_, 0);
      state_ = std::exchange(other.state_, graph_state::empty);
      keep_graph_ = other.keep_graph_;
      pool_ = std::move(other.pool_);
      annot_ = std::move(other.annot_);
      liveness_ = std::move(other.liveness_);
    }
    return *this;
  }

  basic_graph(const basic_graph&) = delete;
  basic_graph& operator=(const basic_graph&) = delete;

  /// Destroys the executable graph, the template and the side stream; never throws. A capture
  /// scope must not outlive its graph (as an iterator must not outlive its container).
  ~basic_graph() { release(); }

  // ---- capture ---------------------------------------------------------------------------------

  /// Begins capturing on `stream` (any stream but the legacy default one) and returns the scope
  /// that ends it. scope::end() finishes the capture; a scope destroyed before end() (an
  /// exception) ends and discards the capture, leaving the stream not capturing.
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] scope
  begin_capture(cudaStream_t stream) {
    require_state(graph_state::empty, "begin a capture",
                  "call reset() first, or capture into another graph");
    if (is_legacy_default_stream(stream)) [[unlikely]] {
      detail::throw_error<capture_error>(
          cudaErrorStreamCaptureUnsupported, "graphcap::begin_capture",
          "CUDA graphs must be captured on a non-default stream (pass a stream created with "
          "cudaStreamNonBlocking, or none to use the graph's own side stream); replaying on the "
          "default stream afterwards is fine");
    }
    detail::check(cudaGetDevice(&device_), "cudaGetDevice");
    start_capture(stream);
    return scope(*this, stream);
  }

  /// Begins capturing on the graph's own non-blocking side stream (created on first use, on the
  /// current device). Nothing runs during a capture, so the side stream needs no ordering with
  /// your other work: replay(stream) orders the graph's work on the stream you replay it on.
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] scope
  begin_capture() {
    require_state(graph_state::empty, "begin a capture",
                  "call reset() first, or capture into another graph");
    int device = 0;
    detail::check(cudaGetDevice(&device), "cudaGetDevice");
    if (!side_stream_ || device != device_) {
      const detail::relaxed_capture_mode_guard relaxed;
      cudaStream_t stream = nullptr;
      detail::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags");
      side_stream_.reset(stream);
    }
    device_ = device;
    start_capture(side_stream_.get());
    return scope(*this, side_stream_.get());
  }

  /// begin_capture(stream) for a stream object (cuda::stream_ref, ...; see stream_wrapper).
  template <stream_wrapper Stream>
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] scope
  begin_capture(const Stream& stream) {
    return begin_capture(static_cast<cudaStream_t>(stream.get()));
  }

  /// Captures what `work` issues on the graph's side stream. `work` takes the capture scope
  /// (`scope&` or `auto&`), the capture stream (`cudaStream_t`), or nothing. Returns what `work`
  /// returns. If `work` throws, the capture is ended and discarded and the exception propagates
  /// unchanged.
  template <class Work>
  decltype(auto) capture(Work&& work) {
    return run_capture(begin_capture(), std::forward<Work>(work));
  }

  /// Captures what `work` issues on `stream` (see capture(work)).
  template <class Work>
  decltype(auto) capture(cudaStream_t stream, Work&& work) {
    return run_capture(begin_capture(stream), std::forward<Work>(work));
  }

  /// capture(stream, work) for a stream object (cuda::stream_ref, ...).
  template <stream_wrapper Stream, class Work>
  decltype(auto) capture(const Stream& stream, Work&& work) {
    return capture(static_cast<cudaStream_t>(stream.get()), std::forward<Work>(work));
  }

  // ---- capture again, updating the executable graph in place ----------------------------------

  /// Captures `work` again (as capture(work) does) and makes the executable graph match it:
  /// updated in place with cudaGraphExecUpdate when CUDA allows (same topology, node types and
  /// kernel functions; parameters and addresses may change), instantiated anew otherwise. The
  /// result says which happened and why. The graph's pool hands the new capture the blocks of
  /// the old one in the same order, so the same allocations get the same addresses. If `work`
  /// throws or the capture fails, the graph is left empty, as after any failed capture. Returns
  /// the update_result; what `work` returns is dropped (use begin_recapture() to keep it).
  template <class Work>
  update_result recapture(Work&& work) {
    return run_recapture(begin_recapture(), std::forward<Work>(work));
  }

  /// Captures `work` again on `stream` (see recapture(work)).
  template <class Work>
  update_result recapture(cudaStream_t stream, Work&& work) {
    return run_recapture(begin_recapture(stream), std::forward<Work>(work));
  }

  /// recapture(stream, work) for a stream object (cuda::stream_ref, ...).
  template <stream_wrapper Stream, class Work>
  update_result recapture(const Stream& stream, Work&& work) {
    return recapture(static_cast<cudaStream_t>(stream.get()), std::forward<Work>(work));
  }

  /// The RAII form of recapture(): begins a capture whose end() updates the executable graph
  /// (scope::update() tells how). On an empty graph it is begin_capture().
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] recapture_scope
  begin_recapture(cudaStream_t stream) {
    detail::exec_handle previous = release_for_recapture();
    return recapture_scope{begin_capture(stream), std::move(previous)};
  }

  /// begin_recapture(stream) for a stream object (cuda::stream_ref, ...).
  template <stream_wrapper Stream>
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] recapture_scope
  begin_recapture(const Stream& stream) {
    return begin_recapture(static_cast<cudaStream_t>(stream.get()));
  }

  /// The same, on the graph's own side stream.
  [[nodiscard("the capture ends when the scope is destroyed; call end() on it")]] recapture_scope
  begin_recapture() {
    detail::exec_handle previous = release_for_recapture();
    return recapture_scope{begin_capture(), std::move(previous)};
  }

  // ---- instantiate and replay ------------------------------------------------------------------

  /// Instantiates the captured template. Without keep_graph this already happened at the end of
  /// the capture, and calling it again is a state_error; with keep_graph it (re)instantiates
  /// from the current template, e.g. after you edited raw_graph().
  void instantiate() {
    if (state_ == graph_state::instantiated && !keep_graph_) {
      throw state_error(
          "graphcap: instantiate() called on a graph that was instantiated at the end of its "
          "capture; only a graph constructed with graphcap::keep_graph can be instantiated again");
    }
    if (!graph_) {
      throw state_error(message("instantiate()", "capture first; instantiate() needs a finished "
                                                 "capture"));
    }
    instantiate_template();
  }

  /// Launches the graph on `stream` (any stream of the capture's device, the default stream
  /// too). On the success path this is the hand-written sequence: the policies' pre-replay
  /// checks (none when they are off) and one cudaGraphLaunch. Misuse (no executable graph yet)
  /// is diagnosed only after the launch failed, so it costs nothing when all is well.
  void replay(cudaStream_t stream = nullptr) {
    liveness_.before_replay(stream);
    pool_.before_replay(stream);
    annot_.before_replay(stream);
    const cudaError_t status = cudaGraphLaunch(exec_.get(), stream);
    if (status != cudaSuccess) [[unlikely]] {
      recover_failed_replay(status, stream);
    }
  }

  /// replay(stream) for a stream object (cuda::stream_ref, ...): unwrapped inline, no cost.
  template <stream_wrapper Stream>
  void replay(const Stream& stream) {
    replay(static_cast<cudaStream_t>(stream.get()));
  }

  /// Uploads the executable graph to the device ahead of its first replay (cudaGraphUpload), so
  /// the first replay costs what later ones do. Instantiates first under keep_graph.
  void upload(cudaStream_t stream = nullptr) {
    ensure_executable("upload()");
    detail::check(cudaGraphUpload(exec_.get(), stream), "cudaGraphUpload");
  }

  /// upload(stream) for a stream object (cuda::stream_ref, ...).
  template <stream_wrapper Stream>
  void upload(const Stream& stream) {
    upload(static_cast<cudaStream_t>(stream.get()));
  }

  /// Drops the executable graph and the template (the graph's side stream is kept for the next
  /// capture). Not allowed while a capture scope is open.
  void reset() {
    if (state_ == graph_state::capturing) {
      throw state_error(message("reset()", "end the capture (scope::end(), or let the scope be "
                                           "destroyed) before resetting the graph"));
    }
    drop_graphs();
  }

  // ---- inspection ------------------------------------------------------------------------------

  [[nodiscard]] graph_state state() const noexcept { return state_; }
  /// True when the graph holds no capture (new, reset, or after a failed capture).
  [[nodiscard]] bool empty() const noexcept { return state_ == graph_state::empty; }
  /// True when the graph was constructed with keep_graph.
  [[nodiscard]] bool keeps_graph() const noexcept { return keep_graph_; }
  /// Nodes in the captured graph (0 for an empty capture, which is valid and replays as a
  /// no-op: it usually means the work went to another stream than the capture stream).
  [[nodiscard]] std::size_t node_count() const noexcept { return node_count_; }
  /// The device that was current when the capture began (-1 before the first capture).
  [[nodiscard]] int device() const noexcept { return device_; }

  /// The captured template. Exists after the capture with keep_graph (or before instantiation);
  /// the graph keeps ownership. Editing it takes effect at the next instantiate().
  [[nodiscard]] cudaGraph_t raw_graph() const {
    if (!graph_) {
      throw state_error(
          message("raw_graph()", keep_graph_ ? "capture first"
                                             : "construct the graph with graphcap::keep_graph "
                                               "to keep the template after instantiation"));
    }
    return graph_.get();
  }

  /// The executable graph; the graph keeps ownership.
  [[nodiscard]] cudaGraphExec_t raw_exec() const {
    if (!exec_) {
      throw state_error(message("raw_exec()", keep_graph_ ? "call instantiate() or replay() first"
                                                          : "capture first"));
    }
    return exec_.get();
  }

  /// Writes the template as a Graphviz DOT file (cudaGraphDebugDotPrint). Needs the template:
  /// construct the graph with keep_graph.
  void debug_dump(const std::string& path, bool verbose = true) const {
    if (!graph_) {
      throw state_error(message("debug_dump()", "construct the graph with graphcap::keep_graph "
                                                "to keep the template for debug_dump()"));
    }
    const unsigned int flags =
        verbose ? static_cast<unsigned int>(cudaGraphDebugDotFlagsVerbose) : 0U;
    detail::check(cudaGraphDebugDotPrint(graph_.get(), path.c_str(), flags),
                  "cudaGraphDebugDotPrint");
  }

  /// A handle to the graph's pool, for other graphs to share it
  /// (`graph_with<pool::shared> next{first.pool()};`). Needs pool::private_pool or pool::shared.
  template <class P = Pool>
  [[nodiscard]] pool_handle pool() {
    static_assert(P::has_handle,
                  "graphcap: pool() needs a graph whose pool can be shared: use "
                  "pool::private_pool or pool::shared, not pool::none or pool::graph_memory_nodes");
    return pool_.handle();
  }

  /// What the graph's pool holds (reserved and in-use bytes, slabs, blocks).
  template <class P = Pool>
  [[nodiscard]] graphcap::pool_statistics pool_statistics() const {
    static_assert(P::has_handle, "graphcap: pool_statistics() needs a graph with a slab pool: "
                                 "pool::private_pool, pool::shared or pool::user");
    return pool_.statistics();
  }

  /// The policies' state, for the features that expose one (pool statistics, annotations...).
  [[nodiscard]] Pool& pool_policy() noexcept { return pool_; }
  [[nodiscard]] Annot& annot_policy() noexcept { return annot_; }
  /// The annotated nodes of the last capture. Needs an Annot policy that records them
  /// (annot::on, from <graphcap/annotations.hpp>).
  template <class A = Annot>
  [[nodiscard]] decltype(auto) annotations() const {
    static_assert(
        requires(const A& annot) { annot.annotations(); },
        "graphcap: annotations() needs a graph with annotations on: use annot::on "
        "(#include <graphcap/annotations.hpp>, link graphcap::annotations)");
    return annot_.annotations();
  }
  [[nodiscard]] Liveness& liveness_policy() noexcept { return liveness_; }

private:
  // -- lifecycle steps, shared by the lambda and the RAII forms ----------------------------------

  void start_capture(cudaStream_t stream) {
    try { // a policy's preparation may throw (liveness resolves driver entry points)
      pool_.before_capture(stream);
      annot_.before_capture(stream);
      liveness_.before_capture(stream);
    } catch (...) {
      abort_policies();
      throw;
    }
    const cudaError_t status = cudaStreamBeginCapture(stream, Mode::value);
    if (status != cudaSuccess) [[unlikely]] {
      abort_policies();
      detail::throw_cuda<capture_error>(status, "cudaStreamBeginCapture");
    }
    state_ = graph_state::capturing;
    pool_.after_capture_begin(stream);
    annot_.after_capture_begin(stream);
    liveness_.after_capture_begin(stream);
  }

  /// Takes the executable graph out for a recapture to update, and drops the rest of the old
  /// capture: the template, and what the policies recorded (the pool takes its blocks back, in
  /// order, for the new capture to reuse).
  detail::exec_handle release_for_recapture() {
    if (state_ == graph_state::capturing) {
      throw state_error(message("recapture", "end the capture in progress first"));
    }
    detail::exec_handle previous = std::move(exec_);
    graph_.reset();
    node_count_ = 0;
    state_ = graph_state::empty;
    if constexpr (requires { pool_.on_recapture(); }) {
      pool_.on_recapture();
    } else {
      pool_.on_reset();
    }
    annot_.on_reset();
    liveness_.on_reset();
    return previous;
  }

  /// `update`: set for a recapture, whose executable graph is updated (or replaced) at once.
  struct pending_update {
    detail::exec_handle* previous;
    update_result* result;
  };

  /// Ends the capture; `Updating` (a recapture_scope's end): update `update.previous` from the
  /// new template, or instantiate. A plain capture's end compiles no update code at all.
  template <bool Updating>
  void finish_capture(cudaStream_t stream, pending_update update) {
    try { // a policy's last captured work (the pool's completion marker) may fail
      pool_.before_capture_end(stream);
      annot_.before_capture_end(stream);
      liveness_.before_capture_end(stream);
    } catch (...) {
      abandon_capture(stream);
      throw;
    }
    cudaGraph_t captured = nullptr;
    const cudaError_t status = cudaStreamEndCapture(stream, &captured);
    if (status == cudaErrorStreamCaptureWrongThread) [[unlikely]] {
      // The capture goes on: only the thread that began it can end it.
      detail::throw_cuda<capture_error>(status, "cudaStreamEndCapture");
    }
    if (status != cudaSuccess || captured == nullptr) [[unlikely]] {
      if (captured != nullptr) {
        detail::graph_handle{captured}.reset();
      }
      end_and_discard(stream);
      state_ = graph_state::empty;
      abort_policies();
      const cudaError_t reported =
          status == cudaSuccess ? cudaErrorStreamCaptureInvalidated : status;
      detail::throw_cuda<capture_error>(reported, "cudaStreamEndCapture",
                                        invalidation_hint(reported, stream));
    }
    graph_.reset(captured);
    state_ = graph_state::captured;
    try {
      std::size_t count = 0;
      detail::check(cudaGraphGetNodes(captured, nullptr, &count), "cudaGraphGetNodes");
      node_count_ = static_cast<std::uint32_t>(count - policy_marker_nodes);
      pool_.after_capture_end(captured);
      if constexpr (!std::is_empty_v<Liveness> && requires { pool_.for_each_slab(ignore_slab); }) {
        // The pool's memory is the graph's own, never an external input.
        pool_.for_each_slab(
            [this](const void* base, std::size_t bytes) { liveness_.exclude(base, bytes); });
      }
      annot_.after_capture_end(captured);
      liveness_.after_capture_end(captured);
      if constexpr (Updating) {
        update_or_instantiate(update);
        if (!keep_graph_) {
          graph_.reset();
        }
      } else if (!keep_graph_) {
        instantiate_template();
        graph_.reset(); // the executable graph is all a replay needs
      }
    } catch (...) {
      drop_graphs();
      throw;
    }
  }

  /// For an invalidated capture on a blocking stream, the likeliest cause: legacy-stream work.
  GRAPHCAP_COLD static std::string invalidation_hint(cudaError_t status, cudaStream_t stream) {
    std::string hint{detail::hint_for(status)};
    unsigned int flags = 0;
    if (status == cudaErrorStreamCaptureInvalidated &&
        cudaStreamGetFlags(stream, &flags) == cudaSuccess && (flags & cudaStreamNonBlocking) == 0) {
      hint += "; the capture stream is blocking, so work issued on the legacy default stream "
              "during the capture also invalidates it: capture on a stream created with "
              "cudaStreamNonBlocking";
    }
    static_cast<void>(cudaGetLastError());
    return hint;
  }

  /// Ends a capture that will not be used (exception, scope destroyed early); never throws and
  /// never leaves the stream capturing.
  void abandon_capture(cudaStream_t stream) noexcept {
    end_and_discard(stream);
    state_ = graph_state::empty;
    abort_policies();
  }

  /// Ends whatever capture is still running on `stream` and destroys what it produced. An end
  /// that fails for another reason than an invalidated capture may leave the stream capturing
  /// (seen with fault injection), so this asks CUDA and tries again, a bounded number of times.
  static void end_and_discard(cudaStream_t stream) noexcept {
    for (int attempt = 0; attempt < 3; ++attempt) {
      // If CUDA cannot say, end anyway: ending a stream that does not capture fails harmlessly.
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
      if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
          status == cudaStreamCaptureStatusNone) {
        break;
      }
      cudaGraph_t captured = nullptr;
      detail::ignore(cudaStreamEndCapture(stream, &captured));
      if (captured != nullptr) {
        detail::graph_handle{captured}.reset();
      }
    }
    static_cast<void>(cudaGetLastError());
  }

  void instantiate_template() {
    exec_.reset();
    cudaGraphExec_t exec = nullptr;
    {
      const detail::relaxed_capture_mode_guard relaxed;
      detail::check(cudaGraphInstantiateWithFlags(&exec, graph_.get(), Pool::instantiate_flags),
                    "cudaGraphInstantiateWithFlags");
    }
    exec_.reset(exec);
    state_ = graph_state::instantiated;
    pool_.after_instantiate(exec);
    annot_.after_instantiate(exec);
    liveness_.after_instantiate(exec);
  }

  /// Updates the previous executable graph from the new template if CUDA allows, else
  /// instantiates; records which in the result.
  void update_or_instantiate(pending_update update) {
    detail::exec_handle& previous = *update.previous;
    if (!previous) {
      *update.result = {update_outcome::instantiated, cudaGraphExecUpdateSuccess,
                        "there was no executable graph to update", cudaSuccess};
      instantiate_template();
      return;
    }
    cudaGraphExecUpdateResultInfo info{};
    cudaError_t status = cudaSuccess;
    {
      const detail::relaxed_capture_mode_guard relaxed;
      status = cudaGraphExecUpdate(previous.get(), graph_.get(), &info);
    }
    if (status == cudaSuccess) {
      exec_ = std::move(previous);
      state_ = graph_state::instantiated;
      *update.result = {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess};
      pool_.after_instantiate(exec_.get());
      annot_.after_instantiate(exec_.get());
      liveness_.after_instantiate(exec_.get());
      return;
    }
    static_cast<void>(cudaGetLastError());
    *update.result = {update_outcome::reinstantiated, info.result,
                      detail::update_refusal(info.result), status};
    previous.reset(); // first: a graph with memory nodes may have one executable at a time
    instantiate_template();
  }

  void ensure_executable(std::string_view operation) {
    if (exec_) {
      return;
    }
    if (state_ == graph_state::captured) {
      instantiate_template(); // keep_graph: lazy instantiation
      return;
    }
    throw state_error(message(operation, "capture a graph first (capture() or begin_capture())"));
  }

  /// The cold half of replay(): find out why the launch failed, recover where that is the
  /// documented behaviour (lazy instantiation), otherwise throw an error that says why.
  GRAPHCAP_COLD void recover_failed_replay(cudaError_t status, cudaStream_t stream) {
    if (!exec_) {
      static_cast<void>(cudaGetLastError()); // the failed launch of a null graph
      ensure_executable("replay()");         // throws unless lazily instantiable
      detail::check(cudaGraphLaunch(exec_.get(), stream), "cudaGraphLaunch");
      return;
    }
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != device_) {
      detail::throw_cuda(status, "cudaGraphLaunch",
                         "the graph was captured on device " + std::to_string(device_) +
                             " but device " + std::to_string(current) +
                             " is current: replay on a stream of device " +
                             std::to_string(device_) + ", or cudaSetDevice(" +
                             std::to_string(device_) + ") first");
    }
    detail::throw_cuda(status, "cudaGraphLaunch");
  }

  void abort_policies() noexcept {
    pool_.on_capture_abort();
    annot_.on_capture_abort();
    liveness_.on_capture_abort();
  }

  void drop_graphs() noexcept {
    exec_.reset();
    graph_.reset();
    node_count_ = 0;
    state_ = graph_state::empty;
    pool_.on_reset();
    annot_.on_reset();
    liveness_.on_reset();
  }

  void release() noexcept {
    drop_graphs();
    side_stream_.reset();
  }

  void require_state(graph_state wanted, std::string_view operation, std::string_view what_to_do) {
    if (state_ != wanted) [[unlikely]] {
      throw state_error(message(operation, what_to_do));
    }
  }

  [[nodiscard]] std::string message(std::string_view operation, std::string_view what_to_do) const {
    std::string text{"graphcap: cannot "};
    text.append(operation);
    text += " while the graph is ";
    text.append(to_string(state_));
    text += ": ";
    text.append(what_to_do);
    return text;
  }

  // `Scope` is always `scope`; a template parameter because `scope` is still incomplete here.
  template <class Scope, class Work>
  static decltype(auto) invoke_work(Scope& cap, Work&& work) {
    if constexpr (std::is_invocable_v<Work, Scope&>) {
      return std::invoke(std::forward<Work>(work), cap);
    } else if constexpr (std::is_invocable_v<Work, cudaStream_t>) {
      return std::invoke(std::forward<Work>(work), cap.stream());
    } else {
      static_assert(std::is_invocable_v<Work>,
                    "graphcap: capture(work) needs a callable taking the capture scope (scope& "
                    "or auto&), the capture stream (cudaStream_t), or nothing");
      return std::invoke(std::forward<Work>(work));
    }
  }

  template <class Scope, class Work>
  static decltype(auto) run_capture(Scope cap, Work&& work) {
    using result = decltype(invoke_work(cap, std::forward<Work>(work)));
    if constexpr (std::is_void_v<result>) {
      invoke_work(cap, std::forward<Work>(work));
      cap.end();
    } else {
      result value = invoke_work(cap, std::forward<Work>(work));
      cap.end();
      return value;
    }
  }

  template <class Scope, class Work>
  static update_result run_recapture(Scope cap, Work&& work) {
    static_cast<void>(invoke_work(cap, std::forward<Work>(work)));
    cap.end();
    return cap.update();
  }

  static constexpr auto ignore_slab = [](const void*, std::size_t) {};

  /// Nodes the Pool policy adds to every capture for itself (its completion marker).
  static constexpr std::size_t policy_marker_nodes = [] {
    if constexpr (requires { Pool::marker_nodes; }) {
      return Pool::marker_nodes;
    } else {
      return std::size_t{0};
    }
  }();

  // -- data: the handles a hand-written program needs, then the policies (empty when off)
  // ----------

  detail::graph_handle graph_;        // the captured template (kept only with keep_graph)
  detail::exec_handle exec_;          // the executable graph
  detail::stream_handle side_stream_; // capture stream when none is given; created on first use
  int device_ = -1;                   // current device at the last capture
  std::uint32_t node_count_ = 0;
  graph_state state_ = graph_state::empty;
  bool keep_graph_ = false;
  [[no_unique_address]] Pool pool_{};
  [[no_unique_address]] Annot annot_{};
  [[no_unique_address]] Liveness liveness_{};
};

/// The capture in progress on one graph: its stream, the features the graph's policies offer
/// during a capture (allocate, mark, input), and end(). Move-only; destroyed before end() it
/// discards the capture.
template <capture_mode Mode, pool_strategy Pool, annotation_policy Annot, liveness_policy Liveness>
class basic_graph<Mode, Pool, Annot, Liveness>::scope {
public:
  using graph_type = basic_graph;
  using pool_type = Pool;

  scope(scope&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), stream_(other.stream_) {}
  scope& operator=(scope&&) = delete;
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

  ~scope() {
    if (graph_ != nullptr) {
      graph_->abandon_capture(stream_);
    }
  }

  /// The stream being captured: issue the graph's work here (kernels, copies, library calls).
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }

  /// True until end() was called (or the scope was moved from).
  [[nodiscard]] bool active() const noexcept { return graph_ != nullptr; }

  /// Ends the capture and (without keep_graph) instantiates the graph. Throws capture_error if
  /// the capture was invalidated or left forked work unjoined; the graph is then empty again.
  void end() { finish<false>({nullptr, nullptr}); }

  /// Memory for `count` objects of type T from the graph's pool, at an address fixed for every
  /// replay. Needs an allocating Pool policy.
  template <class T>
  [[nodiscard]] T* allocate(std::size_t count) {
    static_assert(Pool::can_allocate,
                  "graphcap: allocate() needs a graph whose pool policy allocates: use "
                  "pool::private_pool, pool::shared, pool::user or pool::graph_memory_nodes, not "
                  "pool::none");
    return allocate<T>(count, stream_);
  }

  /// The same, for work on `stream`, a stream forked from the capture stream. The memory comes
  /// from the same pool.
  template <class T>
  [[nodiscard]] T* allocate(std::size_t count, cudaStream_t stream) {
    static_assert(Pool::can_allocate,
                  "graphcap: allocate() needs a graph whose pool policy allocates: use "
                  "pool::private_pool, pool::shared, pool::user or pool::graph_memory_nodes, not "
                  "pool::none");
    return active_graph().pool_.template allocate<T>(count, stream);
  }

  /// Memory for `count` objects of type T from the graph's pool, owned by the returned buffer:
  /// it stays valid, at the same address, while any copy of the buffer lives, even after the
  /// graph is reset or destroyed (an output you keep). Needs a slab pool.
  template <class T>
  [[nodiscard]] buffer<T> make_buffer(std::size_t count) {
    return make_buffer<T>(count, stream_);
  }

  /// The same, for work on `stream`, a stream forked from the capture stream.
  template <class T>
  [[nodiscard]] buffer<T> make_buffer(std::size_t count, cudaStream_t stream) {
    static_assert(Pool::has_handle,
                  "graphcap: make_buffer() needs a graph whose pool keeps blocks in slabs: use "
                  "pool::private_pool, pool::shared or pool::user (pool::graph_memory_nodes "
                  "memory belongs to its graph; pool::none allocates nothing)");
    return active_graph().pool_.template make_buffer<T>(count, stream);
  }

  /// Gives back memory allocate() returned in this capture: later allocations of the same size on
  /// the same stream in this capture may reuse it. Needs an allocating Pool policy.
  template <class T>
  void deallocate(T* pointer) {
    static_assert(Pool::can_allocate,
                  "graphcap: deallocate() needs a graph whose pool policy allocates: use "
                  "pool::private_pool, pool::shared, pool::user or pool::graph_memory_nodes, not "
                  "pool::none");
    deallocate(pointer, stream_);
  }

  /// The same, for memory last used by work on `stream` (where it was allocated for).
  template <class T>
  void deallocate(T* pointer, cudaStream_t stream) {
    static_assert(Pool::can_allocate,
                  "graphcap: deallocate() needs a graph whose pool policy allocates: use "
                  "pool::private_pool, pool::shared, pool::user or pool::graph_memory_nodes, not "
                  "pool::none");
    active_graph().pool_.deallocate(pointer, stream);
  }

  /// Tags the nodes captured while the returned marker lives with `name` (annot::off: no-op).
  [[nodiscard]] auto mark(std::string_view name) {
    return policy(&basic_graph::annot_).mark(stream_, name);
  }
  /// Tags the nodes captured while the returned marker lives with key/value pairs.
  [[nodiscard]] auto mark(std::initializer_list<annotation_entry> entries) {
    return policy(&basic_graph::annot_).mark(stream_, entries);
  }

  /// Declares an input the graph reaches indirectly (a pointer stored in device memory), for
  /// the liveness check (liveness::off: no-op).
  void input(const void* pointer) { policy(&basic_graph::liveness_).add_input(pointer); }

  /// Declares an indirect input whose life the allocator reports through `token` (memory of a
  /// sub-allocator, whose frees the driver cannot see; docs/liveness.md). liveness::off: no-op.
  void input(const void* pointer, std::weak_ptr<const void> token) {
    policy(&basic_graph::liveness_).add_input(pointer, std::move(token));
  }

protected:
  template <bool Updating>
  void finish(pending_update update) {
    if (graph_ == nullptr) {
      throw state_error("graphcap: this capture scope was already ended (end() called twice, or "
                        "the scope was moved from)");
    }
    basic_graph* const graph = std::exchange(graph_, nullptr);
    try {
      graph->template finish_capture<Updating>(stream_, update);
    } catch (const capture_error& failure) {
      if (failure.code() == cudaErrorStreamCaptureWrongThread) {
        graph_ = graph; // still capturing: end() may be retried on the thread that began it
      }
      throw;
    }
  }

private:
  friend class basic_graph;
  scope(basic_graph& graph, cudaStream_t stream) noexcept : graph_(&graph), stream_(stream) {}

  /// The graph's policy object. A stateless policy (every "off" one) needs no graph, so it is
  /// reached with no check at all: its call compiles to nothing, also after end().
  template <class Policy>
  decltype(auto) policy(Policy basic_graph::*member) const {
    if constexpr (std::is_empty_v<Policy>) {
      return Policy{};
    } else {
      return (active_graph().*member);
    }
  }

  [[noreturn]] static void throw_ended() {
    throw state_error("graphcap: this capture scope has ended; allocate(), mark() and input() "
                      "work only while the capture runs");
  }

  basic_graph& active_graph() const {
    if (graph_ == nullptr) {
      throw_ended();
    }
    return *graph_;
  }

  basic_graph* graph_;
  cudaStream_t stream_;
};

/// The capture of a recapture (begin_recapture(), recapture()): a scope whose end() updates the
/// graph's previous executable graph in place, or instantiates anew, and records which in
/// update(). Its own type, so that a plain capture's end() reaches no update code. (Hold it as
/// `auto`: sliced to a plain scope, its end() would instantiate anew.)
template <capture_mode Mode, pool_strategy Pool, annotation_policy Annot, liveness_policy Liveness>
class basic_graph<Mode, Pool, Annot, Liveness>::recapture_scope : public scope {
public:
  recapture_scope(recapture_scope&& other) noexcept
      : scope(std::move(other)), previous_(std::move(other.previous_)),
        update_(std::move(other.update_)) {}
  recapture_scope& operator=(recapture_scope&&) = delete;
  recapture_scope(const recapture_scope&) = delete;
  recapture_scope& operator=(const recapture_scope&) = delete;
  ~recapture_scope() = default;

  /// Ends the capture and updates the executable graph in place, or instantiates it anew.
  void end() { this->template finish<true>({&previous_, &update_}); }

  /// After end(): whether the executable graph was updated in place or instantiated anew, and
  /// why.
  [[nodiscard]] const update_result& update() const noexcept { return update_; }

private:
  friend class basic_graph;
  recapture_scope(scope&& capture, detail::exec_handle previous) noexcept
      : scope(std::move(capture)), previous_(std::move(previous)) {}

  detail::exec_handle previous_; // the executable graph to update, until end()
  update_result update_;
};

} // namespace graphcap
