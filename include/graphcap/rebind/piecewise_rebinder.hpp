// graphcap/rebind/piecewise_rebinder.hpp - graphcap::rebinder of a piecewise_graph: one rebinder
// over every segment, so that one call moves an input in every segment whose nodes hold it
// (<graphcap/rebind.hpp>; docs/rebinding.md, "Piecewise graphs and families").
//
//   graphcap::piecewise_graph<> step{graphcap::keep_graph};
//   step.capture(stream, [&](auto& cap) { ...; cap.eager(island); ...; });
//   graphcap::rebinder inputs{step, {tokens, logits}};       // scans every segment
//   inputs.rebind({{tokens, next_tokens}, {logits, next_logits}});
//
// Each segment that holds a registered input gets a rebinder of its own graph (the basic one,
// told to drop the inputs that segment does not hold); this one checks the moves once, hands
// each segment the moves of its inputs, and rolls every segment back if one refuses. An input no
// segment's node holds (memory only an island reads) is refused, naming it.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/error.hpp>
#include <graphcap/rebind/detail/refusals.hpp>
#include <graphcap/rebind/detail/segments.hpp>
#include <graphcap/rebind/detail/sites.hpp>
#include <graphcap/rebind/rebind_error.hpp>
#include <graphcap/rebind/rebinder.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

template <class Graph, class Context>
class piecewise_graph;

/// The rebinder of a piecewise graph: one registration and one rebind() for every segment. A
/// move patches the nodes of every segment that holds the input, and every segment's
/// liveness::check watches the new address; the moves are checked before any segment is
/// patched, and a refusal in one segment rolls the others back. Refers to the graph: it must not
/// outlive it. A capture, recapture() or reset() of the graph makes it stale (rebind() throws
/// state_error) until rescan(). docs/rebinding.md.
template <class Graph, class Context>
class rebinder<piecewise_graph<Graph, Context>> : detail::core_extension {
public:
  using graph_type = piecewise_graph<Graph, Context>; ///< the piecewise graph it patches

  /// Scans every segment for the `inputs`. \throws state_error unless the graph was made with
  /// keep_graph and captured; rebind_error for an input no segment holds (one only an island
  /// reads), for overlapping inputs, and what a segment's scan refuses (an input inside a child
  /// graph, conditional bodies nobody recorded).
  rebinder(graph_type& graph, std::span<const rebind_input> inputs,
           template_patch when = template_patch::at_once)
      : graph_(&graph), when_(when) {
    require_ready("construct a rebinder");
    std::vector<detail::rebind::bound_input> registered;
    for (const rebind_input& input : inputs) {
      detail::rebind::register_input(registered, reinterpret_cast<std::uintptr_t>(input.address),
                                     input.bytes, rebind_input::to_allocation_end);
    }
    scan(std::move(registered));
  }
  /// As above, for a braced list: `rebinder binder{step, {a, b, {c, bytes}}}`.
  rebinder(graph_type& graph, std::initializer_list<rebind_input> inputs,
           template_patch when = template_patch::at_once)
      : rebinder(graph, std::span<const rebind_input>{inputs.begin(), inputs.size()}, when) {}
  /// Registers every external CUDA allocation a node of any segment holds (all_inputs_t).
  /// \throws state_error as above.
  rebinder(graph_type& graph, all_inputs_t /*every*/, template_patch when = template_patch::at_once)
      : graph_(&graph), when_(when), all_inputs_(true) {
    require_ready("construct a rebinder");
    scan({});
  }
  rebinder(const rebinder&) = delete;
  rebinder& operator=(const rebinder&) = delete;
  /// Takes `other`'s inputs and segments; `other` is left moved from (every call refuses).
  rebinder(rebinder&&) noexcept = default;
  /// As the move constructor; what this rebinder held is dropped.
  rebinder& operator=(rebinder&&) noexcept = default;
  ~rebinder() = default;

  /// Moves the input at `from` to `to` (whose size is asked from CUDA), in every segment.
  /// \throws as rebind(moves).
  void rebind(const void* from, const void* to) {
    const rebinding one{from, to};
    rebind(std::span<const rebinding>{&one, 1});
  }
  /// Moves the input at `from` to `to`, a buffer of `to_bytes` bytes (no driver query).
  /// \throws as rebind(moves).
  void rebind(const void* from, const void* to, std::size_t to_bytes) {
    const rebinding one{from, to, to_bytes};
    rebind(std::span<const rebinding>{&one, 1});
  }
  /// Moves several inputs in one call: all are checked before any segment is patched.
  /// \throws as rebind(moves).
  void rebind(std::initializer_list<rebinding> moves) {
    rebind(std::span<const rebinding>{moves.begin(), moves.size()});
  }
  /// As above, for a span. \throws state_error (stale, moved from), rebind_error (not an input,
  /// a null or too small target), cuda_error (a patch CUDA refused). \post on a throw nothing is
  /// patched in any segment (those patched before are moved back); inputs keep their addresses.
  void rebind(std::span<const rebinding> moves) {
    require_current("rebind");
    detail::rebind::resolve_moves(moves, inputs_, no_nodes_, which_, rebinding::unknown_size);
    std::size_t done = 0;
    try {
      for (; done < segments_.size(); ++done) {
        segment_moves(done, moves, false);
        if (!scratch_.empty()) {
          segments_[done].binder.rebind(std::span<const rebinding>{scratch_});
        }
      }
      detail::rebind::move_unheld_liveness(graph_->segments_, unheld_, moves, which_, inputs_,
                                           key());
    } catch (...) {
      // A segment whose template patch failed after its executable's kept the move (the basic
      // rebinder's rule): it goes back with the others.
      if (done < segments_.size() && !scratch_.empty() &&
          segments_[done].binder.is_input(scratch_.front().to)) {
        ++done;
      }
      while (done-- > 0) {
        segment_moves(done, moves, true);
        try {
          if (!scratch_.empty()) {
            segments_[done].binder.rebind(std::span<const rebinding>{scratch_});
          }
        } catch (...) { // NOLINT(bugprone-empty-catch): the first error is the one to report
        }
      }
      throw;
    }
    for (std::size_t i = 0; i < moves.size(); ++i) {
      inputs_[which_[i]].address = reinterpret_cast<std::uintptr_t>(moves[i].to);
    }
  }

  /// Gives every segment's kept template the patches its executable got (template_patch::
  /// deferred; at_once does it in every rebind()). \throws state_error (stale), cuda_error.
  void sync_template() {
    require_current("sync_template");
    for (segment_binder& segment : segments_) {
      segment.binder.sync_template();
    }
  }

  /// Scans every segment again after a capture, recapture() or reset() and capture of the
  /// graph, for the inputs at their current addresses (all_inputs: every external allocation
  /// again). \throws state_error (no templates), rebind_error (an input no segment holds),
  /// cuda_error. \post after a throw nothing changed (the rebinder stays stale).
  void rescan() {
    require_ready("rescan");
    if (graph_->generation() == generation_) {
      sync_template();
    }
    std::vector<detail::rebind::bound_input> registered;
    if (!all_inputs_) {
      for (const detail::rebind::bound_input& input : inputs_) {
        registered.push_back({input.address, input.bytes, {}});
      }
    }
    scan(std::move(registered));
  }

  /// Registered inputs.
  [[nodiscard]] std::size_t input_count() const noexcept { return inputs_.size(); }
  /// Whether `address` is a registered input's current address.
  [[nodiscard]] bool is_input(const void* address) const noexcept {
    return index_of(address) != inputs_.size();
  }
  /// The segments whose nodes hold the input at `address` (0 for no registered input).
  [[nodiscard]] std::size_t segments_holding(const void* address) const noexcept {
    const std::size_t index = index_of(address);
    return index == inputs_.size() ? 0 : holders_[index].size();
  }
  /// The places the input at `address` is held, in every segment.
  [[nodiscard]] std::size_t site_count(const void* address) const noexcept {
    std::size_t sites = 0;
    for (const segment_binder& segment : segments_) {
      sites += segment.binder.site_count(address);
    }
    return sites;
  }
  /// The nodes a rebind may patch, in every segment.
  [[nodiscard]] std::size_t node_count() const noexcept {
    std::size_t nodes = 0;
    for (const segment_binder& segment : segments_) {
      nodes += segment.binder.node_count();
    }
    return nodes;
  }
  /// What template node `node` (of any segment) holds of the inputs, or "".
  [[nodiscard]] std::string note(cudaGraphNode_t node) const {
    for (const segment_binder& segment : segments_) {
      std::string text = segment.binder.note(node);
      if (!text.empty()) {
        return text;
      }
    }
    return {};
  }
  /// note() for write_dot()'s dot_options::notes; must not outlive this.
  [[nodiscard]] std::function<std::string(cudaGraphNode_t)> dot_notes() const {
    return [this](cudaGraphNode_t node) { return note(node); };
  }

private:
  struct segment_binder {
    std::size_t index; // the segment's index in the piecewise graph
    rebinder<Graph> binder;
  };
  using unheld_input = detail::rebind::unheld_input;

  [[nodiscard]] bool holds_template() const noexcept {
    return graph_ && graph_->keeps_graph() &&
           (graph_->state() == graph_state::captured ||
            graph_->state() == graph_state::instantiated);
  }
  void require_ready(const char* what) const {
    if (!graph_) [[unlikely]] {
      detail::rebind::throw_moved_from(what);
    }
    if (!graph_->keeps_graph()) [[unlikely]] {
      detail::rebind::throw_not_kept(what);
    }
    if (!holds_template()) [[unlikely]] {
      detail::rebind::throw_not_ready(what, graph_->state(), true);
    }
  }
  void require_current(const char* what) const {
    if (!graph_) [[unlikely]] {
      detail::rebind::throw_moved_from(what);
    }
    if (graph_->state() == graph_state::capturing) [[unlikely]] {
      detail::rebind::throw_capture_open(what);
    }
    if (!holds_template() || graph_->generation() != generation_) [[unlikely]] {
      detail::rebind::throw_stale(what);
    }
  }

  // The moves of `moves` whose input segment `k` holds, into scratch_ (`back`: the way back).
  void segment_moves(std::size_t k, std::span<const rebinding> moves, bool back) {
    scratch_.clear();
    for (std::size_t i = 0; i < moves.size(); ++i) {
      const std::vector<std::size_t>& holders = holders_[which_[i]];
      if (std::find(holders.begin(), holders.end(), k) == holders.end()) {
        continue;
      }
      const std::size_t extent = inputs_[which_[i]].bytes; // checked: `to` has as many bytes
      scratch_.push_back(back ? rebinding{moves[i].to, moves[i].from, extent}
                              : rebinding{moves[i].from, moves[i].to, extent});
    }
  }

  [[nodiscard]] std::size_t index_of(const void* address) const noexcept {
    const auto wanted = reinterpret_cast<std::uintptr_t>(address);
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i].address == wanted) {
        return i;
      }
    }
    return inputs_.size();
  }

  void scan(std::vector<detail::rebind::bound_input> registered) {
    std::vector<rebind_input> asked;
    asked.reserve(registered.size());
    for (const detail::rebind::bound_input& input : registered) {
      asked.emplace_back(detail::rebind::as_pointer(input.address), input.bytes);
    }
    std::vector<segment_binder> found;
    for (std::size_t k = 0; k < graph_->segment_count(); ++k) {
      Graph& segment = *graph_->segments_[k];
      if (segment.node_count() == 0) {
        continue; // an island first, or two in a row: nothing to patch
      }
      rebinder<Graph> binder{segment, std::span<const rebind_input>{asked}, when_, all_inputs_,
                             detail::rebind::held_only_t{}};
      if (binder.input_count() != 0) {
        found.push_back({k, std::move(binder)});
      }
    }
    if (all_inputs_) { // the allocations any segment holds, each once
      for (const segment_binder& segment : found) {
        for (const detail::rebind::bound_input& input : segment.binder.inputs_) {
          if (std::none_of(registered.begin(), registered.end(),
                           [&](const auto& known) { return known.address == input.address; })) {
            registered.push_back({input.address, input.bytes, {}});
          }
        }
      }
    }
    std::vector<std::vector<std::size_t>> holders(registered.size());
    for (std::size_t i = 0; i < registered.size(); ++i) {
      for (std::size_t s = 0; s < found.size(); ++s) {
        if (found[s].binder.is_input(detail::rebind::as_pointer(registered[i].address))) {
          holders[i].push_back(s);
        }
      }
      if (holders[i].empty()) [[unlikely]] {
        detail::rebind::throw_held_by_no_segment(registered[i].address, registered[i].bytes,
                                                 graph_->segment_count());
      }
    }
    std::vector<std::vector<std::size_t>> held_in(registered.size()); // segment indices
    for (std::size_t i = 0; i < registered.size(); ++i) {
      for (const std::size_t s : holders[i]) {
        held_in[i].push_back(found[s].index);
      }
    }
    unheld_ = detail::rebind::unheld_inputs(graph_->segments_, registered, held_in, key());
    inputs_ = std::move(registered); // taken once nothing can fail: a failed scan changes nothing
    holders_ = std::move(holders);
    segments_ = std::move(found);
    generation_ = graph_->generation();
  }

  detail::rebind::graph_link<graph_type> graph_; // null once moved from
  template_patch when_ = template_patch::at_once;
  bool all_inputs_ = false;
  std::uint32_t generation_ = 0;
  std::vector<detail::rebind::bound_input> inputs_; // every segment's, at their current address
  std::vector<std::vector<std::size_t>> holders_;   // per input: positions in segments_
  std::vector<segment_binder> segments_;            // the segments holding an input
  std::vector<unheld_input> unheld_;
  std::vector<detail::rebind::patchable_node> no_nodes_; // resolve_moves' nodes: none here
  // Scratch of rebind(), kept to spare the allocations.
  std::vector<std::size_t> which_;
  std::vector<rebinding> scratch_;
};

} // namespace graphcap
