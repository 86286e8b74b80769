// graphcap/control_flow/replay_loop.hpp - replay a graph n times, in order, for less than n replays
// cost.
//
//   graphcap::graph g{graphcap::keep_graph};          // the template is what gets unrolled
//   g.capture(stream, step);
//   graphcap::replay_loop loop{g};                    // builds nothing yet
//   loop.replay(stream, 1000);                        // the graph 1000 times, in order
//   loop.form();                                      // how it unrolled (flat, child_graphs, ...)
//   loop.form_reason();                               // and why
//
// A launch of a small graph costs more on the host than its work takes on the device, so a loop
// of replays is bound by launches. replay_loop makes, once, an executable of k copies of the
// graph chained one after the other (k as large as the node cap allows, 64 at most) and launches
// it n / k times; the n % k iterations left run as executables of 2, 4, 8, ... copies (built when
// first needed: one launch per bit of the remainder) or as replays of the graph. The copies are
// either flat (the template's nodes copied into the chain node by node: the chain holds kernels,
// not graphs) or child-graph nodes of the template; replay_loop_options::form chooses, and by
// default (automatic) the loop copies flat where every node type allows it. Where unrolling
// cannot be done it launches the graph n times: without keep_graph (there is no template to
// copy), for pool::graph_memory_nodes and for graphs with conditional nodes (CUDA takes neither
// as a child graph, and the flat form copies neither), or when one copy is over the node cap.
// form() says what the loop chose and form_reason() why. Measured: docs/control-flow.md.
//
// The loop holds a reference to its graph, which must outlive it. A recapture of the graph
// (generation() changes) is noticed at the next replay(), which builds the unrolled executables
// again from the new template.
// The policies' pre-replay checks (liveness) run once per replay() call. Annotations do not
// follow into the unrolled executables: their nodes get ids of their own.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/detail/unrolled_chain.hpp>
#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/wing_contract.hpp>
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
#include <vector>

namespace graphcap {

/// How a replay_loop unrolls its graph (replay_loop_options::form asks, replay_loop::form()
/// says what it did).
enum class replay_loop_form : std::uint8_t {
  automatic,    ///< (asked only) flat where every node can be copied, else child_graphs
  flat,         ///< the template's nodes copied into one graph, copy after copy
  child_graphs, ///< each copy one child-graph node of the template
  replays,      ///< no unrolling: the graph replayed n times
};

/// The form's name ("automatic", "flat", "child_graphs", "replays").
[[nodiscard]] constexpr std::string_view to_string(replay_loop_form form) noexcept {
  switch (form) {
  case replay_loop_form::automatic:
    return "automatic";
  case replay_loop_form::flat:
    return "flat";
  case replay_loop_form::child_graphs:
    return "child_graphs";
  case replay_loop_form::replays:
    return "replays";
  }
  return "unknown";
}

/// How the n % copies() iterations left after the full unrolled launches run.
enum class replay_loop_remainder : std::uint8_t {
  binary,  ///< executables of 2, 4, 8, ... copies, built when first needed: a launch per bit
  replays, ///< the graph replayed once per iteration left
};

/// How far and how a replay_loop unrolls.
struct replay_loop_options {
  std::size_t max_copies = 64;   ///< copies of the graph in the unrolled executable, at most
  std::size_t max_nodes = 65536; ///< nodes in the unrolled executable, at most
  replay_loop_form form = replay_loop_form::automatic;             ///< how copies are made
  replay_loop_remainder remainder = replay_loop_remainder::binary; ///< how the rest runs
};

/// Replays a graph n times in order for about n / copies() launches: an executable of up to 64
/// copies of the graph chained one after the other (flat or as child graphs: form()), built once
/// from the graph's kept template (keep_graph), launched n / copies() times, then the rest
/// (replay_loop_options::remainder). Where that cannot be done (no kept template, graph memory
/// nodes, conditional nodes, over the node cap) it replays the graph n times and
/// unrolled_reason() says why. The graph must outlive the loop.
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

  /// Runs the graph `n` times on `stream`, in order: n / copies() launches of the unrolled
  /// executable, then the rest (replay_loop_options::remainder). std::invalid_argument, before
  /// anything is launched, for a negative `n` or one over max_count (what a negative count
  /// converted to std::size_t becomes: replay(s, -1) would otherwise launch for ever).
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
    return form_ != replay_loop_form::replays ? copies_ : 1;
  }

  /// Why the loop does not unroll ("" where it does).
  [[nodiscard]] std::string_view unrolled_reason() noexcept {
    prepare_quietly();
    return form_ == replay_loop_form::replays ? std::string_view{reason_} : std::string_view{};
  }

  /// How the loop unrolls: flat, child_graphs, or replays (never automatic).
  [[nodiscard]] replay_loop_form form() noexcept {
    prepare_quietly();
    return form_;
  }

  /// Why the loop took form(): what was asked, and what made it choose or give up.
  [[nodiscard]] std::string_view form_reason() noexcept {
    prepare_quietly();
    return reason_;
  }

private:
  void replay_count(stream_ref stream, std::size_t n) {
    if (n == 0) {
      return;
    }
    prepare();
    if (form_ == replay_loop_form::replays) {
      for (std::size_t i = 0; i < n; ++i) {
        graph_->replay(stream);
      }
      return;
    }
    std::size_t left = n - 1;
    const std::size_t rest = left % copies_;
    const bool binary = options_.remainder == replay_loop_remainder::binary;
    if (binary) {
      build_parts(rest); // before anything is launched: a failure launches nothing
    }
    graph_->replay(stream); // the policies' checks, and the first iteration
    for (; left >= copies_; left -= copies_) {
      launch(unrolled_.get(), stream);
    }
    if (binary) {
      for (std::size_t bit = parts_.size(); bit-- > 1;) {
        if (((rest >> bit) & 1U) != 0U) {
          launch(parts_[bit].get(), stream);
        }
      }
      left = rest & 1U;
    }
    for (; left > 0; --left) {
      launch(graph_->raw_exec(), stream);
    }
  }

  static void launch(cudaGraphExec_t exec, stream_ref stream) {
    detail::check(cudaGraphLaunch(exec, stream.get()), "cudaGraphLaunch");
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
    parts_.clear();
    built_ = true;
    built_for_ = graph_->generation();
    form_ = replay_loop_form::replays;
    if constexpr (detail::contract::allocates_graph_nodes<typename Graph::pool_type>) {
      reason_ = "pool::graph_memory_nodes: CUDA takes no graph with memory nodes as a child graph";
      return;
    }
    if (!graph_->keeps_graph()) {
      reason_ = "the graph does not keep its template: construct it with graphcap::keep_graph";
      return;
    }
    if (options_.form == replay_loop_form::replays) {
      reason_ = "replays asked for (replay_loop_options::form)";
      return;
    }
    const std::size_t nodes = std::max<std::size_t>(graph_->node_count(), 1);
    copies_ = std::min(options_.max_copies, options_.max_nodes / nodes);
    if (copies_ < 2) {
      reason_ = "one copy of the graph is over the node cap (replay_loop_options::max_nodes)";
      return;
    }
    try {
      build();
    } catch (...) {
      built_ = false; // a failed build is tried again at the next replay, not taken for "built"
      form_ = replay_loop_form::replays;
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

  /// The unrolled executable, flat where asked (or automatic) and every node can be copied,
  /// else of child graphs; form_ and reason_ say which and why.
  void build() {
    const detail::relaxed_capture_mode_guard relaxed;
    const cudaGraph_t body = graph_->raw_graph();
    const bool automatic = options_.form == replay_loop_form::automatic;
    std::string refusal;
    if (automatic || options_.form == replay_loop_form::flat) {
      detail::control_flow::read_body(body, body_);
      refusal = detail::control_flow::flat_refusal(body_);
      if (refusal.empty()) {
        try {
          unrolled_ = make(replay_loop_form::flat, copies_);
          form_ = replay_loop_form::flat;
          reason_ = automatic ? "automatic: every node of the graph can be copied into one graph"
                              : "flat asked for (replay_loop_options::form)";
          return;
        } catch (const cuda_error& failure) {
          if (!refused(failure.code())) {
            throw; // a failure (memory, a lost device), not a refusal of the copy: say so
          }
          refusal = failure.what(); // CUDA refused a copy: child graphs may still do
        }
      }
      refusal = (automatic ? "automatic: " : "flat asked for, but ") + refusal;
    } else {
      refusal = "child_graphs asked for (replay_loop_options::form)";
    }
    exec_handle children = make(replay_loop_form::child_graphs, copies_);
    if (!children) {
      reason_ = refusal + "; and CUDA refused the graph as a child graph (it holds conditional "
                          "nodes?): replays";
      return;
    }
    unrolled_ = std::move(children);
    form_ = replay_loop_form::child_graphs;
    reason_ = options_.form == replay_loop_form::child_graphs ? refusal
                                                              : refusal + "; child graphs instead";
  }

  using exec_handle = detail::exec_handle;

  /// Whether CUDA's `status` for a node copy refuses that node (child graphs may take it), not
  /// a failure to report.
  [[nodiscard]] static constexpr bool refused(cudaError_t status) noexcept {
    return status == cudaErrorNotSupported || status == cudaErrorInvalidValue ||
           status == cudaErrorInvalidDeviceFunction;
  }

  /// An executable of `copies` copies in `form` (flat or child_graphs); null where CUDA takes
  /// no such child graph.
  [[nodiscard]] exec_handle make(replay_loop_form form, std::size_t copies) {
    cudaGraph_t made = nullptr;
    detail::check(cudaGraphCreate(&made, 0), "cudaGraphCreate");
    const detail::graph_handle chain{made};
    if (form == replay_loop_form::flat) {
      detail::control_flow::chain_flat(made, body_, copies);
    } else if (detail::control_flow::chain_children(made, graph_->raw_graph(), copies) !=
               cudaSuccess) {
      return {};
    }
    return detail::control_flow::instantiate_chain(made);
  }

  /// The executables of 2^bit copies that the remainder `rest` needs (bit 0 is the graph's own).
  void build_parts(std::size_t rest) {
    std::size_t bits = 0;
    for (std::size_t r = rest; r != 0; r >>= 1U) {
      ++bits;
    }
    if (parts_.size() < bits) {
      parts_.resize(bits);
    }
    for (std::size_t bit = 1; bit < bits; ++bit) {
      if (((rest >> bit) & 1U) != 0U && !parts_[bit]) {
        const detail::relaxed_capture_mode_guard relaxed;
        parts_[bit] = make(form_, std::size_t{1} << bit);
      }
    }
  }

  Graph* graph_;
  replay_loop_options options_;
  exec_handle unrolled_;
  std::vector<exec_handle> parts_;        // parts_[bit]: 2^bit copies (bit >= 1), built when needed
  detail::control_flow::body_nodes body_; // the template's nodes, for the flat form
  bool built_ = false;
  std::uint16_t built_for_ = 0; // the graph's generation() the unrolled executables copy
  std::size_t copies_ = 1;
  replay_loop_form form_ = replay_loop_form::replays;
  std::string reason_ = "not built yet";
};

} // namespace graphcap
