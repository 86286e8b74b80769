// graphcap/core/detail/graph_lifecycle.hpp - the steps of a graph's lifecycle that drive its
// policies: begin a capture, end it, make the executable graph (fresh or updated), abandon it,
// instantiate, replay, reset. basic_graph is the public face of one of these; a capture scope
// holds a pointer to it, so that a scope reaches the policies (allocate, mark, input) and ends
// the capture without knowing the graph type's public API.
//
// A closed engine: its data and steps are private, and it has three doors. The graph and its
// scopes are friends (they are the lifecycle's two faces); each capture kind ends and abandons
// itself through the steps (capture_kind::fresh instantiates, capture_kind::update updates);
// and the wings that hook into a graph get the policies, and two steps (a replay whose liveness
// check the caller made: replay_checked; an executable handed on as graph_family's patch switch
// set it: take_matched_executable), with a policy_key that only a core_extension (the base such
// a wing derives from) makes. Nothing else reaches inside.
//
// Hooks run as core/policy.hpp says: Pool, Annot, Liveness, each step in that order
// (before_replay: Liveness first); a failure at any step leaves no stream capturing and every
// policy aborted or reset.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/core/detail/capture.hpp>
#include <graphcap/core/detail/graph_core.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {
namespace detail {

/// The key to a lifecycle's policies for the wings that hook into a graph (a conditional node's
/// annotations, a body's streams and inputs; the liveness leaf's declared inputs; a piecewise
/// graph's one liveness check per step). Only a core_extension makes one, so a policy's mutable
/// state has no way in from outside the core by accident, and the one lifecycle step it opens is
/// replay_checked (a replay less its liveness check). The core names none of the wings.
class policy_key {
  friend class core_extension;
  constexpr policy_key() noexcept = default;
};

/// The base of a wing's code that hooks into a graph's lifecycle: its key() opens the
/// policies (graph_lifecycle's pool(key), annot(key), liveness(key)), policy_access and
/// scope_services (core/scope.hpp). A wing derives from it; users have no reason to.
class core_extension {
protected:
  /// The key the lifecycle's doors ask for.
  [[nodiscard]] static constexpr policy_key key() noexcept { return policy_key{}; }
};

/// `*stream`, refused if it cannot capture (`core` notes the device); null: `core`'s side stream.
inline cudaStream_t checked_stream(graph_core& core, const stream_ref* stream) {
  if (stream != nullptr) {
    capture::require_capturable(*stream);
    core.note_capture_device();
  }
  return stream != nullptr ? stream->get() : core.side_stream_for_current_device();
}

/// The handles and policies of one graph, and the lifecycle steps that drive them.
template <capture_mode Mode, pool_strategy Pool, annotation_policy Annot, liveness_policy Liveness>
class graph_lifecycle {
public:
  graph_lifecycle() noexcept = default;
  /// With keep_graph (the template is kept after instantiation), and the pool's arguments.
  template <class... PoolArguments>
  explicit graph_lifecycle(bool keep_graph, PoolArguments&&... pool)
      : core_(keep_graph), pool_(std::forward<PoolArguments>(pool)...) {}
  graph_lifecycle(graph_lifecycle&&) noexcept = default;
  /// Drops this graph's capture (as reset() does), then takes `other`'s.
  graph_lifecycle& operator=(graph_lifecycle&& other) noexcept {
    if (this != &other) {
      release();
      core_ = std::move(other.core_);
      pool_ = std::move(other.pool_);
      annot_ = std::move(other.annot_);
      liveness_ = std::move(other.liveness_);
    }
    return *this;
  }
  graph_lifecycle(const graph_lifecycle&) = delete;
  graph_lifecycle& operator=(const graph_lifecycle&) = delete;
  ~graph_lifecycle() { release(); }

  // ---- the wings' door: the policies, for their hooks (see policy_key) ---------------------
  Pool& pool(policy_key /*key*/) noexcept { return pool_; }
  Annot& annot(policy_key /*key*/) noexcept { return annot_; }
  Liveness& liveness(policy_key /*key*/) noexcept { return liveness_; }
  /// The one step behind the key: replay() less the Liveness check a piecewise step made.
  void replay_checked(policy_key /*key*/, cudaStream_t stream) { replay<false>(stream); }
  /// take_executable() less the update (graph_family set `from`'s nodes to match); the hooks run.
  void take_matched_executable(policy_key /*key*/, graph_lifecycle& from) {
    core_.require_takeable(from.core_);
    take_matched_executable_of(core_, from.core_);
    dropping_on_failure([&] { after_instantiate_hooks(); });
  }

private:
  friend class basic_graph<Mode, Pool, Annot, Liveness>;
  template <class Graph, class Kind>
  friend class graphcap::basic_scope;
  friend struct graphcap::capture_kind::fresh;
  friend struct graphcap::capture_kind::update;

  // ---- begin -------------------------------------------------------------------------------
  /// Begins capturing on `*stream` (null: the side stream, made for the current device);
  /// returns the capture stream. \throws state_error unless empty, capture_error (the stream),
  /// cuda_error, a hook's error. \post capturing; on a throw still empty, no stream capturing.
  cudaStream_t begin(const stream_ref* stream) {
    require_empty_to_begin(core_);
    const cudaStream_t capturing = checked_stream(core_, stream);
    check_policies();
    start_capture(capturing);
    return capturing;
  }

  /// begin() for a recapture; `previous` gets the executable to update. \throws as begin(); a
  /// refusal (capturing, the stream, check_capture) comes first and loses nothing. \post the
  /// template and policies' records are gone (the pool took its blocks back in order, for reuse).
  cudaStream_t begin_recapture(const stream_ref* stream, exec_handle& previous) {
    refuse_while_capturing(core_, "recapture", "end the capture in progress first");
    const cudaStream_t capturing = checked_stream(core_, stream);
    capture::require_not_capturing(capturing);
    check_policies();
    previous = std::move(core_.exec);
    core_.drop();
    contract::recapture(pool_);
    annot_.on_reset();
    liveness_.on_reset();
    start_capture(capturing);
    return capturing;
  }

  /// The policies' refusals (check_capture, core/policy.hpp): no call where none checks.
  void check_policies() {
    each_policy([](const auto& policy) { contract::check_capture(policy); });
  }

  /// Prepares the policies and begins the capture. A hook that throws, before the capture or
  /// right after it began, leaves no stream capturing and every policy aborted.
  void start_capture(cudaStream_t stream) {
    try { // a policy's preparation may throw (liveness resolves driver entry points)
      each_policy([&](auto& policy) { policy.before_capture(stream); });
    } catch (...) {
      abort_policies();
      throw;
    }
    const cudaError_t status = cudaStreamBeginCapture(stream, Mode::value);
    if (status != cudaSuccess) [[unlikely]] {
      abort_policies();
      detail::throw_cuda<capture_error>(status, "cudaStreamBeginCapture");
    }
    core_.state = graph_state::capturing;
    try { // compiles to nothing where every hook is noexcept (the lean graph)
      each_policy([&](auto& policy) { policy.after_capture_begin(stream); });
    } catch (...) {
      abandon_capture(stream);
      throw;
    }
  }

  // ---- end: the capture kinds call end_capture(), then make the executable graph their way ---
  /// Ends the capture into the template (a scope's end()), the policies' hooks around it.
  /// \throws capture_error, a hook's error. \post captured; on a throw empty (wrong thread: the
  /// capture goes on).
  void end_capture(cudaStream_t stream) {
    try { // a policy's last captured work may fail
      each_policy([&](auto& policy) { policy.before_capture_end(stream); });
    } catch (...) {
      abandon_capture(stream);
      throw;
    }
    const cudaError_t status = capture::end(stream, core_.graph);
    if (status != cudaSuccess) [[unlikely]] {
      if (status != cudaErrorStreamCaptureWrongThread) { // else the capture goes on
        core_.state = graph_state::empty;
        abort_policies();
      }
      capture::throw_end_failure(status, stream);
    }
    core_.state = graph_state::captured;
    dropping_on_failure([&] {
      core_.note_captured(); // counted when node_count() is read
      after_capture_end_hooks();
    });
  }

  /// capture_kind::fresh: instantiates the template, unless keep_graph keeps it for later.
  /// Without keep_graph the template stays too, out of the user's reach, until reset, recapture
  /// or destruction: node_count() counts it when asked (CUDA cannot count an executable's nodes),
  /// not the capture's end. \throws cuda_error. \post instantiated; on a throw empty.
  void instantiate_unless_kept() {
    if (!core_.keep_graph) {
      dropping_on_failure([&] { instantiate_template(); });
    }
  }

  /// capture_kind::update: updates `previous` in place from the template where CUDA allows,
  /// else instantiates anew; `result` says which. \throws cuda_error. \post instantiated, or empty.
  void update_executable(exec_handle& previous, update_result& result) {
    dropping_on_failure([&] {
      core_.update_or_instantiate(previous, result, Pool::instantiate_flags);
      after_instantiate_hooks(); // the template stays (see instantiate_unless_kept)
    });
  }

  /// Runs `step`; if it throws, drops everything (the graph is empty again) and rethrows.
  template <class Step>
  void dropping_on_failure(Step&& step) {
    try {
      std::forward<Step>(step)();
    } catch (...) {
      drop_graphs();
      throw;
    }
  }

  void after_capture_end_hooks() {
    cudaGraph_t captured = core_.graph.get();
    pool_.after_capture_end(captured);
    if constexpr (!std::is_empty_v<Liveness> && pool_with_slabs<Pool>) {
      // The pool's memory is the graph's own, never an external input.
      pool_.for_each_slab(
          [this](const void* base, std::size_t bytes) { liveness_.exclude(base, bytes); });
    }
    annot_.after_capture_end(captured);
    liveness_.after_capture_end(captured);
  }

  /// Ends a capture that will not be used (exception, scope destroyed early); never throws and
  /// never leaves the stream capturing.
  void abandon_capture(cudaStream_t stream) noexcept {
    capture::abandon(stream);
    core_.state = graph_state::empty;
    abort_policies();
  }

  // ---- instantiate, replay, reset ----------------------------------------------------------
  /// instantiate(): again from the template (keep_graph only). \throws state_error, cuda_error.
  /// \post instantiated; after a cuda_error captured.
  void instantiate() {
    core_.require_instantiable();
    instantiate_template();
  }

  void instantiate_template() {
    core_.instantiate(Pool::instantiate_flags);
    after_instantiate_hooks();
  }

  void after_instantiate_hooks() {
    each_policy([exec = core_.exec.get()](auto& policy) { policy.after_instantiate(exec); });
  }

  /// take_executable(): `from`'s executable, updated from this template (keep_graph), then the
  /// after-instantiate hooks (graph_core::take_updated_executable); a refusal changes nothing.
  update_result take_executable(graph_lifecycle& from) {
    core_.require_takeable(from.core_);
    update_result result;
    core_.take_updated_executable(from.core_, result);
    if (result.updated()) {
      dropping_on_failure([&] { after_instantiate_hooks(); });
    }
    return result;
  }

  void ensure_executable(std::string_view operation) {
    if (core_.exec) {
      return;
    }
    if (core_.state == graph_state::captured) {
      instantiate_template(); // keep_graph: lazy instantiation
      return;
    }
    throw state_error(
        core_.message(operation, "capture a graph first (capture() or begin_capture())"));
  }

  /// The policies' pre-replay checks (Liveness first: a refused replay touches nothing else;
  /// none with CheckLiveness false, where the caller made it) and one cudaGraphLaunch; misuse is
  /// diagnosed only after the launch failed. \throws liveness_error, state_error, cuda_error.
  template <bool CheckLiveness = true>
  void replay(cudaStream_t stream) {
    if constexpr (CheckLiveness) {
      liveness_.before_replay(stream);
    }
    pool_.before_replay(stream);
    annot_.before_replay(stream);
    const cudaError_t status = cudaGraphLaunch(core_.exec.get(), stream);
    if (status != cudaSuccess) [[unlikely]] {
      recover_failed_replay(status, stream);
    }
  }

  void upload(cudaStream_t stream) {
    ensure_executable("upload()");
    check(cudaGraphUpload(core_.exec.get(), stream), "cudaGraphUpload");
  }

  /// The cold half of replay(): find out why the launch failed, recover where that is the
  /// documented behaviour (lazy instantiation), otherwise throw an error that says why.
  GRAPHCAP_COLD void recover_failed_replay(cudaError_t status, cudaStream_t stream) {
    if (!core_.exec) {
      static_cast<void>(cudaGetLastError()); // the failed launch of a null graph
      ensure_executable("replay()");         // throws unless lazily instantiable
      check(cudaGraphLaunch(core_.exec.get(), stream), "cudaGraphLaunch");
      return;
    }
    core_.throw_launch_failure(status);
  }

  /// release_executable(): the executable goes, the template stays (keep_graph only).
  /// \throws state_error while capturing or without keep_graph. \post captured; else as before.
  void release_executable() { release_executable_of(core_); }

  /// reset(): drops the capture. \throws state_error while capturing. \post empty; else as before.
  void reset() {
    refuse_while_capturing(core_, "reset()",
                           "end the capture in progress first (scope::end(), or "
                           "let its scope be destroyed), then reset the graph");
    drop_graphs();
  }

  void abort_policies() noexcept {
    each_policy([](auto& policy) noexcept { policy.on_capture_abort(); });
  }

  void drop_graphs() noexcept {
    core_.drop();
    each_policy([](auto& policy) noexcept { policy.on_reset(); });
  }

  /// Calls `hook` on the Pool, Annot and Liveness policies, in that order.
  template <class Hook>
  void each_policy(Hook&& hook) noexcept(
      noexcept(hook(pool_)) && noexcept(hook(annot_)) && noexcept(hook(liveness_))) {
    hook(pool_);
    hook(annot_);
    hook(liveness_);
  }

  void release() noexcept {
    drop_graphs();
    core_.side_stream.reset();
  }

  /// The handles, read-only: the graph's inspection (state, node count, raw handles).
  [[nodiscard]] const graph_core& core() const noexcept { return core_; }
  /// The policies, for the graph's and the scope's calls.
  [[nodiscard]] Pool& pool() noexcept { return pool_; }
  [[nodiscard]] const Pool& pool() const noexcept { return pool_; }
  [[nodiscard]] Annot& annot() noexcept { return annot_; }
  [[nodiscard]] const Annot& annot() const noexcept { return annot_; }
  [[nodiscard]] Liveness& liveness() noexcept { return liveness_; }
  [[nodiscard]] const Liveness& liveness() const noexcept { return liveness_; }

  graph_core core_;                           ///< handles, state: emptied by reset, failures
  [[no_unique_address]] Pool pool_{};         ///< blocks taken in a capture, back at reset
  [[no_unique_address]] Annot annot_{};       ///< the last capture's marks, dropped at reset
  [[no_unique_address]] Liveness liveness_{}; ///< inputs each replay checks: found at capture end
};

} // namespace detail
} // namespace graphcap
