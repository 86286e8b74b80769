// graphcap/control_flow/replay_loop.hpp - replay a graph n times, in order, for less than n replays
// cost.
//
//   graphcap::graph g{graphcap::keep_graph};          // the template is what gets unrolled
//   g.capture(stream, step);
//   graphcap::replay_loop loop{g};                    // builds nothing yet
//   loop.replay(stream, 1000);                        // the graph 1000 times, in order
//
// A launch of a small graph costs more on the host than its work takes on the device, so a loop
// of replays is bound by launches. replay_loop makes, once, an executable of k copies of the
// graph chained one after the other (child-graph nodes; k as large as the node cap allows, 64 at
// most) and launches it n / k times, then the graph itself n % k times: n iterations, in order,
// for about n / k launches. Where unrolling cannot be done it launches the graph n times (the
// reason is in unrolled_reason()): without keep_graph (there is no template to copy), for
// pool::graph_memory_nodes and for graphs with conditional nodes (CUDA takes neither as a child
// graph), or when one copy is over the node cap. Measured crossover: docs/control-flow.md.
//
// The loop holds a reference to its graph, which must outlive it. A recapture of the graph
// (generation() changes) is noticed at the next replay(), which builds the unrolled executable
// again from the new template.
// The policies' pre-replay checks (liveness) run once per replay() call. Annotations do not
// follow into the unrolled executable: its nodes get ids of their own.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {

/// How far a replay_loop unrolls.
struct replay_loop_options {
  std::size_t max_copies = 64;   ///< copies of the graph in the unrolled executable, at most
  std::size_t max_nodes = 65536; ///< nodes in the unrolled executable, at most
};

/// Replays a graph n times in order for about n / copies() launches: an executable of up to 64
/// copies of the graph chained as child graphs, built once from the graph's kept template
/// (keep_graph), launched n / copies() times, then the graph n % copies() times. Where that cannot
/// be done (no kept template, graph memory nodes, conditional nodes, over the node cap) it
/// replays the graph n times and unrolled_reason() says why. The graph must outlive the loop.
template <class Graph>
class replay_loop {
  static_assert(
      requires(const Graph& graph) {
        graph.raw_graph();
        graph.raw_exec();
      },
      "graphcap: replay_loop<Graph> unrolls one graphcap::basic_graph into copies of itself; a "
      "piecewise_graph runs eager islands between its segments, which no copy can hold: replay "
      "it with replay() in a loop");

public:
  /// A loop over `graph` (which must outlive it). Makes no CUDA call.
  explicit replay_loop(Graph& graph, replay_loop_options options = {}) noexcept
      : graph_(&graph), options_(options) {}

  /// Runs the graph `n` times on `stream`, in order, as n / copies() launches of the unrolled
  /// executable and n % copies() replays of the graph. std::invalid_argument, before anything
  /// is launched, for a negative `n` or one over max_count (what a negative count converted to
  /// std::size_t becomes: replay(s, -1) would otherwise launch for ever).
  template <std::integral Count>
  void replay(stream_ref stream, Count n) {
    static_assert(!std::is_same_v<Count, bool>,
                  "graphcap: replay_loop::replay(stream, n) takes a count of replays, not a bool");
    bool negative = false;
    if constexpr (std::is_signed_v<Count>) {
      negative = n < Count{0};
    }
    if (negative || static_cast<unsigned long long>(n) > max_count) [[unlikely]] {
      throw std::invalid_argument(
          "graphcap: replay_loop::replay() was given a count of " + std::to_string(n) +
          (negative ? ", which is negative" : ", which is over replay_loop::max_count (2^62)") +
          ": pass the number of replays, from 0 up");
    }
    replay_count(stream, static_cast<std::size_t>(n));
  }

  /// The largest count replay() takes: 2^62 replays (more than a century at a nanosecond each),
  /// so that a negative count converted to std::size_t is refused, not launched.
  static constexpr std::size_t max_count = std::size_t{1} << 62U;

  /// Iterations one launch of the unrolled executable runs (1 where it does not unroll).
  [[nodiscard]] std::size_t copies() noexcept {
    prepare_quietly();
    return unrolled_ ? copies_ : 1;
  }

  /// Why the loop does not unroll ("" where it does).
  [[nodiscard]] std::string_view unrolled_reason() noexcept {
    prepare_quietly();
    return reason_;
  }

private:
  void replay_count(stream_ref stream, std::size_t n) {
    if (n == 0) {
      return;
    }
    prepare();
    if (!unrolled_) {
      for (std::size_t i = 0; i < n; ++i) {
        graph_->replay(stream);
      }
      return;
    }
    graph_->replay(stream); // the policies' checks, and the first iteration
    std::size_t left = n - 1;
    for (; left >= copies_; left -= copies_) {
      detail::check(cudaGraphLaunch(unrolled_.get(), stream.get()), "cudaGraphLaunch");
    }
    for (; left > 0; --left) {
      detail::check(cudaGraphLaunch(graph_->raw_exec(), stream.get()), "cudaGraphLaunch");
    }
  }

  /// Builds the unrolled executable for the graph's current executable, once.
  void prepare() {
    if (graph_->state() == graph_state::captured) {
      graph_->instantiate(); // keep_graph: instantiated lazily, as its first replay would
    }
    static_cast<void>(graph_->raw_exec()); // state_error before a capture
    if (built_ && graph_->generation() == built_for_) {
      return;
    }
    unrolled_.reset();
    built_ = true;
    built_for_ = graph_->generation();
    reason_ = {};
    if constexpr (detail::contract::allocates_graph_nodes<typename Graph::pool_type>) {
      reason_ = "pool::graph_memory_nodes: CUDA takes no graph with memory nodes as a child graph";
      return;
    }
    if (!graph_->keeps_graph()) {
      reason_ = "the graph does not keep its template: construct it with graphcap::keep_graph";
      return;
    }
    const std::size_t nodes = std::max<std::size_t>(graph_->node_count(), 1);
    copies_ = std::min(options_.max_copies, options_.max_nodes / nodes);
    if (copies_ < 2) {
      reason_ = "one copy of the graph is over the node cap (replay_loop_options::max_nodes)";
      return;
    }
    try {
      build(graph_->raw_graph());
    } catch (...) {
      built_ = false; // a failed build is tried again at the next replay, not taken for "built"
      throw;
    }
  }

  void prepare_quietly() noexcept {
    try {
      prepare();
    } catch (...) { // no executable yet, or CUDA refused: replay() says why
      static_cast<void>(cudaGetLastError());
    }
  }

  void build(cudaGraph_t copy) {
    const detail::relaxed_capture_mode_guard relaxed;
    cudaGraph_t chain = nullptr;
    detail::check(cudaGraphCreate(&chain, 0), "cudaGraphCreate");
    const detail::graph_handle owned{chain};
    cudaGraphNode_t previous = nullptr;
    for (std::size_t i = 0; i < copies_; ++i) {
      cudaGraphNode_t node = nullptr;
      const cudaError_t added =
          cudaGraphAddChildGraphNode(&node, chain, previous != nullptr ? &previous : nullptr,
                                     previous != nullptr ? 1 : 0, copy);
      if (added == cudaErrorNotSupported) { // conditional nodes: CUDA clones no such graph
        static_cast<void>(cudaGetLastError());
        reason_ = "CUDA refused the graph as a child graph (it holds conditional nodes?)";
        return;
      }
      detail::check(added, "cudaGraphAddChildGraphNode"); // any other failure is not a refusal
      previous = node;
    }
    cudaGraphExec_t exec = nullptr;
    detail::check(cudaGraphInstantiateWithFlags(&exec, chain, 0), "cudaGraphInstantiateWithFlags");
    unrolled_.reset(exec);
  }

  Graph* graph_;
  replay_loop_options options_;
  detail::exec_handle unrolled_;
  bool built_ = false;
  std::uint16_t built_for_ = 0; // the graph's generation() the unrolled executable copies
  std::size_t copies_ = 1;
  std::string_view reason_ = "not built yet";
};

} // namespace graphcap
