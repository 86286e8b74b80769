// graphcap/core/detail/graph_core.hpp - what every basic_graph holds and does whatever its
// policies: the handles a careful hand-written program keeps for one CUDA graph, its state, and the
// policy-free steps of its lifecycle (the side stream, instantiation, update, messages).
//
// Not a template, so that these steps are not instantiated once per configuration (inline
// functions: each translation unit that uses them still compiles them, and the linker keeps one
// copy); basic_graph calls its policies' hooks around them.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/core/detail/instantiate_refusal.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace graphcap::detail {

/// The handles and the state of one graph. A plain aggregate of what a hand-written program
/// keeps (sizeof(lean_graph) is sizeof(graph_core): test/compile/checks.hpp).
struct graph_core {
  graph_handle graph; // the template: made at a capture's end, kept until reset or recapture
  exec_handle exec;   // the executable: made at instantiation, gone at reset, release or take
  stream_handle side_stream; // capture stream when none is given; created on first use
  int device = -1;           // the current device at the last capture's begin
  int side_device = -1;      // the device side_stream belongs to: set when it is (re)made
  mutable std::uint32_t node_count = 0;   // counted at the first node_count() (see nodes())
  graph_state state = graph_state::empty; // where the lifecycle is: every step sets it
  bool keep_graph = false;                // keep the template for the user: fixed at construction
  std::uint16_t generation = 0; // +1 at every capture's end: what caches of the graph check

  graph_core() noexcept = default;
  explicit graph_core(bool keep) noexcept : keep_graph(keep) {}
  graph_core(graph_core&& other) noexcept
      : graph(std::move(other.graph)), exec(std::move(other.exec)),
        side_stream(std::move(other.side_stream)), device(other.device),
        side_device(std::exchange(other.side_device, -1)),
        node_count(std::exchange(other.node_count, 0)),
        state(std::exchange(other.state, graph_state::empty)), keep_graph(other.keep_graph),
        generation(other.generation) {}
  graph_core& operator=(graph_core&& other) noexcept {
    if (this != &other) {
      graph = std::move(other.graph);
      exec = std::move(other.exec);
      side_stream = std::move(other.side_stream);
      device = other.device;
      side_device = std::exchange(other.side_device, -1);
      node_count = std::exchange(other.node_count, 0);
      state = std::exchange(other.state, graph_state::empty);
      keep_graph = other.keep_graph;
      generation = static_cast<std::uint16_t>(other.generation + 1); // another graph now
    }
    return *this;
  }
  graph_core(const graph_core&) = delete;
  graph_core& operator=(const graph_core&) = delete;
  ~graph_core() = default;

  /// Records the current device as the capture's.
  void note_capture_device() { check(cudaGetDevice(&device), "cudaGetDevice"); }

  /// The graph's own non-blocking side stream on the current device: created at the first
  /// stream-less capture, and again whenever the current device is not the one it was created
  /// on (whatever device an explicit-stream capture recorded in between).
  [[nodiscard]] cudaStream_t side_stream_for_current_device() {
    note_capture_device();
    if (!side_stream || side_device != device) {
      const relaxed_capture_mode_guard relaxed;
      cudaStream_t stream = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      side_stream.reset(stream);
      side_device = device;
    }
    return side_stream.get();
  }

  /// node_count while the template's nodes are not counted yet.
  static constexpr std::uint32_t uncounted = 0x8000'0000U;

  /// A capture ended into `graph`: its nodes are counted when someone asks (nodes()), not
  /// now (cudaGraphGetNodes walks every node).
  void note_captured() noexcept {
    node_count = uncounted;
    ++generation;
  }

  /// The template's nodes (every node is the user's: no policy adds one): counted once per capture,
  /// at the first call (the template stays until reset, recapture or destruction, with keep_graph
  /// or without, so that it can be counted). Throws cuda_error if CUDA cannot count them.
  [[nodiscard]] std::size_t nodes() const {
    if ((node_count & uncounted) != 0U) [[unlikely]] {
      if (!graph) { // cannot happen: only drop() destroys the template, and it sets 0
        throw state_error("graphcap: node_count(): the captured template is gone (an internal "
                          "error: please report it)");
      }
      std::size_t count = 0;
      check(cudaGraphGetNodes(graph.get(), nullptr, &count), "cudaGraphGetNodes");
      node_count = static_cast<std::uint32_t>(count);
    }
    return node_count;
  }

  /// Instantiates the template (any previous executable is destroyed first: a graph with memory
  /// nodes may have one executable at a time).
  void instantiate(unsigned long long flags) {
    exec.reset();
    cudaGraphExec_t made = nullptr;
    cudaError_t status = cudaSuccess;
    {
      const relaxed_capture_mode_guard relaxed;
      status = cudaGraphInstantiateWithFlags(&made, graph.get(), flags);
    }
    if (status != cudaSuccess) [[unlikely]] {
      // The old executable went first (a graph with memory nodes has one at a time): the
      // template alone is left, which a replay or instantiate() instantiates again.
      state = graph_state::captured;
      throw_instantiate_failure(status, flags);
    }
    exec.reset(made);
    state = graph_state::instantiated;
  }

  /// Updates `previous` from the template in place if CUDA allows, and makes it the executable
  /// graph; otherwise instantiates anew. Says which in `result`.
  void update_or_instantiate(exec_handle& previous, update_result& result,
                             unsigned long long flags) {
    if (!previous) {
      result = {update_outcome::instantiated, cudaGraphExecUpdateSuccess,
                "there was no executable graph to update", cudaSuccess};
      instantiate(flags);
      return;
    }
    cudaGraphExecUpdateResultInfo info{};
    cudaError_t status = cudaSuccess;
    {
      const relaxed_capture_mode_guard relaxed;
      status = cudaGraphExecUpdate(previous.get(), graph.get(), &info);
    }
    if (status == cudaSuccess) {
      exec = std::move(previous);
      state = graph_state::instantiated;
      result = {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess};
      return;
    }
    static_cast<void>(cudaGetLastError());
    result = {update_outcome::reinstantiated, info.result, update_refusal(info.result), status};
    previous.reset(); // first: a graph with memory nodes may have one executable at a time
    instantiate(flags);
  }

  /// Throws state_error unless take_updated_executable(from) may run: this graph has its
  /// template (keep_graph, a finished capture), and `from` is another graph with an executable.
  void require_takeable(const graph_core& from) const {
    if (state == graph_state::capturing || !graph || !keep_graph) {
      throw state_error(message("take_executable()",
                                keep_graph ? "capture first, and end the capture"
                                           : "construct the graph with graphcap::keep_graph: the "
                                             "update reads this graph's template"));
    }
    if (this == &from || !from.exec) {
      throw state_error(std::string{"graphcap: take_executable() needs another graph that has an "
                                    "executable graph ("} +
                        (this == &from ? "this is the same graph"
                                       : "the given one has none: instantiate or replay it first") +
                        ")");
    }
  }

  /// Updates `from`'s executable graph in place from this graph's template and takes it (this
  /// graph's own executable, if any, is destroyed); `from` keeps its template and no executable.
  /// A refused update changes nothing (CUDA leaves the executable as it was); another failure
  /// throws cuda_error. Says which in `result`. Both generations move on: caches of either
  /// graph's executable nodes (rebinder, node tags) are stale.
  void take_updated_executable(graph_core& from, update_result& result) {
    cudaGraphExecUpdateResultInfo info{};
    cudaError_t status = cudaSuccess;
    {
      const relaxed_capture_mode_guard relaxed;
      status = cudaGraphExecUpdate(from.exec.get(), graph.get(), &info);
    }
    if (status == cudaErrorGraphExecUpdateFailure) {
      static_cast<void>(cudaGetLastError());
      result = {update_outcome::refused, info.result, update_refusal(info.result), status};
      return;
    }
    check(status, "cudaGraphExecUpdate");
    exec = std::move(from.exec);
    state = graph_state::instantiated;
    from.state = graph_state::captured; // its template stays: a replay instantiates it lazily
    ++generation;
    ++from.generation;
    result = {update_outcome::updated, cudaGraphExecUpdateSuccess, {}, cudaSuccess};
  }

  /// Drops the executable graph and the template; keeps the side stream.
  void drop() noexcept {
    if (exec || graph) { // one capture-mode exchange for both destructions, not one each
      const relaxed_capture_mode_guard relaxed;
      if (exec) {
        ignore(cudaGraphExecDestroy(exec.release()));
      }
      if (graph) {
        ignore(cudaGraphDestroy(graph.release()));
      }
    }
    node_count = 0;
    state = graph_state::empty;
  }

  /// Throws state_error unless instantiate() may run now (the template is there, and was not
  /// instantiated at the capture's end already).
  void require_instantiable() const {
    if (state == graph_state::instantiated && !keep_graph) {
      throw state_error(
          "graphcap: instantiate() called on a graph that was instantiated at the end of its "
          "capture; only a graph constructed with graphcap::keep_graph can be instantiated again");
    }
    if (!graph) {
      throw state_error(message("instantiate()", "capture first; instantiate() needs a finished "
                                                 "capture"));
    }
  }

  /// The template, for raw_graph(); state_error without one.
  [[nodiscard]] cudaGraph_t template_graph(std::string_view operation) const {
    if (!graph || !keep_graph) { // without keep_graph the template is kept for counting only
      throw state_error(message(operation, keep_graph ? "capture first"
                                                      : "construct the graph with "
                                                        "graphcap::keep_graph to keep the "
                                                        "template after instantiation"));
    }
    return graph.get();
  }

  /// The executable graph, for raw_exec(); state_error without one.
  [[nodiscard]] cudaGraphExec_t executable() const {
    if (!exec) {
      throw state_error(message("raw_exec()", keep_graph ? "call instantiate() or replay() first"
                                                         : "capture first"));
    }
    return exec.get();
  }

  /// Writes the template as a Graphviz DOT file (cudaGraphDebugDotPrint).
  void debug_dump(const std::string& path, bool verbose) const {
    const unsigned int flags =
        verbose ? static_cast<unsigned int>(cudaGraphDebugDotFlagsVerbose) : 0U;
    check(cudaGraphDebugDotPrint(template_graph("debug_dump()"), path.c_str(), flags),
          "cudaGraphDebugDotPrint");
  }

  /// Throws state_error unless the graph is in state `wanted`.
  void require_state(graph_state wanted, std::string_view operation,
                     std::string_view what_to_do) const {
    if (state != wanted) [[unlikely]] {
      throw state_error(message(operation, what_to_do));
    }
  }

  /// "graphcap: cannot <operation> while the graph is <state>: <what to do>".
  [[nodiscard]] GRAPHCAP_COLD std::string message(std::string_view operation,
                                                  std::string_view what_to_do) const {
    std::string text{"graphcap: cannot "};
    text.append(operation);
    text += " while the graph is ";
    text.append(to_string(state));
    text += ": ";
    text.append(what_to_do);
    return text;
  }

  /// Throws for an instantiation that failed with `status`: what CUDA refused when it says
  /// (core/detail/instantiate_refusal.hpp), else the likeliest causes.
  GRAPHCAP_COLD [[noreturn]] void throw_instantiate_failure(cudaError_t status,
                                                            unsigned long long flags) const {
    std::string refusal =
        status == cudaErrorInvalidValue ? instantiate_refusal(graph.get(), flags) : std::string{};
    if (refusal.empty()) {
      refusal = status == cudaErrorInvalidValue
                    ? "CUDA refused the captured graph as it is: most often a condition made with "
                      "condition() that no conditional node uses (CUDA instantiates no graph with "
                      "an unused conditional handle), or a node CUDA does not allow where it is"
                    : std::string{hint_for(status)};
    }
    throw_cuda(status, "cudaGraphInstantiateWithFlags", refusal);
  }

  /// Throws for a launch that failed with `status` on a graph that has an executable: names
  /// both devices when another device than the capture's is current.
  GRAPHCAP_COLD [[noreturn]] void throw_launch_failure(cudaError_t status) const {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != device) {
      throw_cuda(status, "cudaGraphLaunch",
                 "the graph was captured on device " + std::to_string(device) + " but device " +
                     std::to_string(current) + " is current: replay on a stream of device " +
                     std::to_string(device) + ", or cudaSetDevice(" + std::to_string(device) +
                     ") first");
    }
    throw_cuda(status, "cudaGraphLaunch");
  }
};

/// A capture begins on an empty graph. During a capture of the same graph, what to do is what
/// reset() says then: end that capture first (captures of one graph do not nest).
inline void require_empty_to_begin(const graph_core& core) {
  core.require_state(graph_state::empty, "begin a capture",
                     core.state == graph_state::capturing
                         ? "captures of one graph do not nest: end the capture in progress first "
                           "(scope::end(), or let its scope be destroyed), or capture into "
                           "another graph (embed() adds a captured graph to a capture)"
                         : "call reset() first, or capture into another graph");
}

/// Throws state_error while a capture scope of the graph is open.
inline void refuse_while_capturing(const graph_core& core, std::string_view operation,
                                   std::string_view what_to_do) {
  if (core.state == graph_state::capturing) [[unlikely]] {
    throw state_error(core.message(operation, what_to_do));
  }
}

/// Takes `from`'s executable graph as it is, the caller having made it match `to`'s template
/// itself (graph_family's patch switch: set-params on the nodes that differ), as
/// take_updated_executable() does after a successful update.
inline void take_matched_executable_of(graph_core& to, graph_core& from) noexcept {
  to.exec = std::move(from.exec);
  to.state = graph_state::instantiated;
  from.state = graph_state::captured;
  ++to.generation;
  ++from.generation;
}

/// Destroys `core`'s executable graph and keeps the template (keep_graph): a replay or
/// instantiate() makes it again, from the same template. The generation stays: the template's
/// node handles name the next executable's nodes too, so caches of them (a rebinder, node tags)
/// go on; that executable starts from the template's settings (docs/families.md).
/// state_error during a capture, or without keep_graph.
inline void release_executable_of(graph_core& core) {
  refuse_while_capturing(core, "release_executable()", "end the capture in progress first");
  if (!core.keep_graph) {
    throw state_error(core.message("release_executable()",
                                   "construct the graph with graphcap::keep_graph: the template "
                                   "is what a replay instantiates again"));
  }
  if (core.exec) {
    const relaxed_capture_mode_guard relaxed;
    ignore(cudaGraphExecDestroy(core.exec.release()));
    core.state = graph_state::captured;
  }
}

} // namespace graphcap::detail
