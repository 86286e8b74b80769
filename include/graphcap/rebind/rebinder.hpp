// graphcap/rebind/rebinder.hpp - move a captured graph's inputs to new addresses without a
// recapture: graphcap::rebinder patches exactly the nodes that hold them, in the executable and
// in the kept template (<graphcap/rebind.hpp>).
//
//   graphcap::graph step{graphcap::keep_graph};
//   step.capture(stream, [&](cudaStream_t s) { forward(s, tokens, logits); });
//   graphcap::rebinder inputs{step, {tokens, logits}};
//   inputs.rebind({{tokens, next_tokens}, {logits, next_logits}}); // no recapture
//   step.replay(stream);
//
// The inputs are registered: an address is patched only where it lies in a registered input's
// extent, never because it merely looks like a pointer (rebind/detail/sites.hpp). See
// docs/rebinding.md.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/error.hpp>
#include <graphcap/rebind/detail/patch.hpp>
#include <graphcap/rebind/detail/refusals.hpp>
#include <graphcap/rebind/detail/scan.hpp>
#include <graphcap/rebind/detail/sites.hpp>
#include <graphcap/rebind/rebind_error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap {

/// A registered input: the address the graph holds, and how many bytes from it the graph may
/// read (to_allocation_end: up to the end of the CUDA allocation holding it). Give the size for
/// memory a sub-allocator carved from one big allocation: there the allocation's end would also
/// take in the neighbours' addresses.
template <class = void>
struct basic_rebind_input {
  /// The extent that reaches the end of the allocation holding the address.
  static constexpr std::size_t to_allocation_end = static_cast<std::size_t>(-1);
  /// The input at `input`, up to the end of its allocation (implicit: `{x, y}` lists two).
  basic_rebind_input(const void* input) noexcept
      : address(input) {} // NOLINT(google-explicit-constructor)
  /// The input at `input`, `extent` bytes long.
  basic_rebind_input(const void* input, std::size_t extent) noexcept
      : address(input), bytes(extent) {}
  const void* address = nullptr;         ///< the input's address in the captured graph
  std::size_t bytes = to_allocation_end; ///< bytes the graph may read from it
};
/// What to name: basic_rebind_input<> (a template only so that its bodies compile where used).
using rebind_input = basic_rebind_input<>;

/// One move: the input now at `from` (its registered address, or where an earlier rebind put
/// it) goes to `to`. `to_bytes` is the new buffer's size; unknown_size asks CUDA (one driver
/// query) and refuses memory CUDA did not allocate.
struct rebinding {
  /// The new buffer's size is asked from CUDA.
  static constexpr std::size_t unknown_size = static_cast<std::size_t>(-1);
  const void* from = nullptr;          ///< the input's current address
  const void* to = nullptr;            ///< its new address
  std::size_t to_bytes = unknown_size; ///< bytes at `to` (at least the input's extent)
};

/// Registers every CUDA allocation outside the graph's own memory that a kernel parameter, a
/// memcpy or a memset of the graph holds, each with its whole allocation as its extent.
struct all_inputs_t {
  explicit all_inputs_t() = default;
};
/// The tag that registers every external allocation (see all_inputs_t).
inline constexpr all_inputs_t all_inputs{};

/// When the kept template gets the patches the executable got.
enum class template_patch : std::uint8_t {
  at_once, ///< in the same rebind() call (each node's parameters set twice)
  deferred ///< at sync_template() or rescan(): rebind() patches the executable alone
};

/// Patches a captured graph's registered inputs to new addresses, in the executable and the
/// kept template, without a recapture. Refers to the graph: it must not outlive it. A
/// recapture() or reset() of the graph makes it stale (rebind() throws state_error) until
/// rescan(). Rebinding inside conditional bodies needs a policy that records them
/// (liveness::check); liveness::check then checks the new addresses before each replay.
template <class Graph>
class rebinder : detail::core_extension {
  static_assert(
      detail::rebind::is_basic_graph<Graph>,
      "graphcap::rebinder takes a basic_graph (graphcap::graph, graph_with<...>, "
      "lean_graph), a piecewise_graph or a graph_family: for the last two, include "
      "<graphcap/rebind.hpp> (rebind/piecewise_rebinder.hpp, rebind/family_rebinder.hpp)");

public:
  /// Scans `graph` for every place the `inputs` are held. \throws state_error unless the graph
  /// was constructed with keep_graph and captured (instantiated or not), rebind_error for an input
  /// the graph does not hold (or holds only where the rebinder cannot patch it) and for overlapping
  /// inputs.
  rebinder(Graph& graph, std::span<const rebind_input> inputs,
           template_patch when = template_patch::at_once)
      : graph_(&graph), when_(when) {
    require_ready("construct a rebinder");
    for (const rebind_input& input : inputs) {
      detail::rebind::register_input(inputs_, reinterpret_cast<std::uintptr_t>(input.address),
                                     input.bytes, rebind_input::to_allocation_end);
    }
    scan(inputs_);
  }
  /// As above, for a braced list: `rebinder binder{graph, {a, b, {c, bytes}}}`.
  rebinder(Graph& graph, std::initializer_list<rebind_input> inputs,
           template_patch when = template_patch::at_once)
      : rebinder(graph, std::span<const rebind_input>{inputs.begin(), inputs.size()}, when) {}
  /// Registers every external CUDA allocation the graph holds (all_inputs_t). \throws as above.
  rebinder(Graph& graph, all_inputs_t /*every*/, template_patch when = template_patch::at_once)
      : graph_(&graph), when_(when), all_inputs_(true) {
    require_ready("construct a rebinder");
    scan({});
  }

  /// Move-only: each patched node's argument pointers point into this rebinder's own copy of its
  /// parameters, so a copy would patch with another's words. A move takes that storage along;
  /// the moved-from rebinder refuses every call (state_error).
  rebinder(const rebinder&) = delete;
  rebinder& operator=(const rebinder&) = delete;
  /// Takes `other`'s inputs and nodes; `other` is left moved from.
  rebinder(rebinder&&) noexcept = default;
  /// As the move constructor; what this rebinder held is dropped.
  rebinder& operator=(rebinder&&) noexcept = default;
  ~rebinder() = default;

  /// Moves the input at `from` to `to` (size asked from CUDA). \throws as rebind(moves) below.
  void rebind(const void* from, const void* to) {
    const rebinding one{from, to};
    rebind(std::span<const rebinding>{&one, 1});
  }
  /// Moves the input at `from` to `to`, a `to_bytes`-byte buffer (no query). \throws as above.
  void rebind(const void* from, const void* to, std::size_t to_bytes) {
    const rebinding one{from, to, to_bytes};
    rebind(std::span<const rebinding>{&one, 1});
  }
  /// Moves several inputs in one call: all are checked before any node is patched.
  /// \throws as rebind(moves).
  void rebind(std::initializer_list<rebinding> moves) {
    rebind(std::span<const rebinding>{moves.begin(), moves.size()});
  }
  /// As above, for a span. \throws state_error (stale, moved from, capturing); rebind_error (not
  /// an input, a null or too small target, overlap); cuda_error (a patch CUDA refused, liveness).
  /// \post on a throw nothing is patched (a refused patch is undone); inputs keep their addresses.
  void rebind(std::span<const rebinding> moves) {
    require_current("rebind");
    detail::rebind::resolve_moves(moves, inputs_, nodes_, which_, rebinding::unknown_size);
    if (++stamp_ == 0) { // a stamp of 0 would match nodes no call touched yet
      for (detail::rebind::patchable_node& node : nodes_) {
        node.stamp = 0;
      }
      stamp_ = 1;
    }
    undo_.clear();
    touched_.clear();
    for (std::size_t i = 0; i < moves.size(); ++i) {
      const detail::rebind::bound_input& input = inputs_[which_[i]];
      const auto to = reinterpret_cast<std::uintptr_t>(moves[i].to);
      for (const detail::rebind::site& site : input.sites) {
        detail::rebind::patchable_node& node = nodes_[site.node];
        const std::uint64_t old = node.word(site.at);
        undo_.push_back({site, old});
        node.set_word(site.at, old - input.address + to);
        if (node.stamp != stamp_) {
          node.stamp = stamp_;
          touched_.push_back(site.node);
        }
      }
    }
    // Not instantiated yet: the template alone is patched, and the executable made from it.
    const bool instantiated = graph_->state() == graph_state::instantiated;
    const cudaGraphExec_t exec = instantiated ? graph_->raw_exec() : nullptr;
    for (std::size_t k = 0; instantiated && k < touched_.size(); ++k) {
      detail::rebind::patchable_node& node = nodes_[touched_[k]];
      const cudaError_t status = detail::rebind::patch_executable(exec, node);
      if (status != cudaSuccess) [[unlikely]] {
        undo(k);
        detail::throw_cuda(status, detail::rebind::exec_call(node.kind),
                           "CUDA refused to patch a node of the executable; nothing was "
                           "rebound. CUDA refuses a memset's destination in pageable host "
                           "memory, the same for a copy's operand that its kind says is device "
                           "memory, and a copy's operand moved between cudaMalloc and "
                           "stream-ordered (cudaMallocAsync) memory (docs/rebinding.md, Errors)");
      }
    }
    move_liveness(moves);
    for (std::size_t i = 0; i < moves.size(); ++i) {
      inputs_[which_[i]].address = reinterpret_cast<std::uintptr_t>(moves[i].to);
    }
    for (const std::uint32_t index : touched_) {
      nodes_[index].template_stale = true;
    }
    if (when_ == template_patch::at_once || !instantiated) {
      sync_template();
    }
  }

  /// Gives the kept template the patches the executable got since the last sync (deferred
  /// mode; at_once does it in every rebind()). Read the template (raw_graph(), debug_dump)
  /// after this. \throws state_error (stale); cuda_error if CUDA refuses a template patch.
  void sync_template() {
    require_current("sync_template");
    for (detail::rebind::patchable_node& node : nodes_) {
      if (node.template_stale) {
        detail::check(detail::rebind::patch_template(node),
                      detail::rebind::template_call(node.kind));
        node.template_stale = false;
      }
    }
  }

  /// Scans the graph again after a recapture() (or a reset() and new capture), for the inputs at
  /// their current addresses (all_inputs: for every external allocation again). Where the
  /// recapture updated the executable in place, it is instantiated anew from the template: CUDA
  /// names an executable's nodes only by the graph it was instantiated from. A failed rescan
  /// changes nothing (the rebinder stays stale: rescan() again). \throws state_error (no
  /// template), rebind_error (an input not held, or not patchable), cuda_error.
  void rescan() {
    require_ready("rescan");
    if (graph_->generation() == generation_) {
      sync_template(); // deferred patches first: the scan reads the template
    }
    scan(all_inputs_ ? std::vector<detail::rebind::bound_input>{} : inputs_);
  }

  /// Registered inputs.
  [[nodiscard]] std::size_t input_count() const noexcept { return inputs_.size(); }
  /// Whether `address` is a registered input's current address.
  [[nodiscard]] bool is_input(const void* address) const noexcept {
    return find(reinterpret_cast<std::uintptr_t>(address)) != inputs_.end();
  }
  /// The places the input at `address` is held (node parameters, memcpy and memset operands);
  /// 0 for no registered input.
  [[nodiscard]] std::size_t site_count(const void* address) const noexcept {
    const auto input = find(reinterpret_cast<std::uintptr_t>(address));
    return input == inputs_.end() ? 0 : input->sites.size();
  }
  /// The nodes a rebind may patch (those holding at least one registered input).
  [[nodiscard]] std::size_t node_count() const noexcept { return nodes_.size(); }
  /// What template node `node` holds of the inputs: "rebindable: arg 0 (input 0x...)", or "".
  [[nodiscard]] std::string note(cudaGraphNode_t node) const {
    return detail::rebind::node_note(node, inputs_, nodes_);
  }
  /// note() for write_dot()'s dot_options::notes (<graphcap/dot.hpp>); must not outlive this.
  [[nodiscard]] std::function<std::string(cudaGraphNode_t)> dot_notes() const {
    return [this](cudaGraphNode_t node) { return note(node); };
  }

private:
  template <class>
  friend class rebinder; // a piecewise graph's: one of these per segment, held_only

  // One segment of a piecewise graph: the `inputs` it does not hold are dropped, not refused.
  rebinder(Graph& graph, std::span<const rebind_input> inputs, template_patch when, bool all_inputs,
           detail::rebind::held_only_t /*tag*/)
      : graph_(&graph), when_(when), all_inputs_(all_inputs), held_only_(true) {
    require_ready("construct a rebinder");
    for (const rebind_input& input : inputs) {
      detail::rebind::register_input(inputs_, reinterpret_cast<std::uintptr_t>(input.address),
                                     input.bytes, rebind_input::to_allocation_end);
    }
    scan(inputs_);
  }

  struct undo_entry {
    detail::rebind::site site;
    std::uint64_t word;
  };

  [[nodiscard]] bool holds_template() const noexcept {
    return graph_ && graph_->keeps_graph() &&
           (graph_->state() == graph_state::captured ||
            graph_->state() == graph_state::instantiated);
  }

  void require_ready(const char* what) const {
    if (!graph_) [[unlikely]] {
      detail::rebind::throw_moved_from(what);
    }
    if (!holds_template()) [[unlikely]] {
      detail::rebind::throw_not_ready(what, graph_->state(), graph_->keeps_graph());
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

  void scan(std::vector<detail::rebind::bound_input> inputs) {
    detail::rebind::scan_request request;
    request.graph = graph_->raw_graph();
    auto& live = detail::policy_access::liveness(*graph_, key());
    request.bodies = detail::contract::conditional_bodies(live);
    request.bodies_known = detail::contract::knows_bodies<std::remove_cvref_t<decltype(live)>>;
    request.all_inputs = all_inputs_;
    request.held_only = held_only_;
    detail::contract::for_each_slab(
        detail::policy_access::pool(*graph_, key()), [&](const void* base, std::size_t bytes) {
          request.internal.push_back({reinterpret_cast<std::uintptr_t>(base), bytes});
        });
    auto found = detail::rebind::scan(request, inputs).nodes;
    if (graph_->state() == graph_state::instantiated && !found.empty()) {
      // CUDA names an executable's nodes by those of the graph it was instantiated from; after
      // a recapture that updated it in place, the kept template's nodes name none of them
      // (cudaErrorInvalidValue: benchmark/probes/rebind_limits.cu). A patch with the node's own
      // parameters tells, and changes nothing; then the executable is instantiated anew.
      const cudaError_t status =
          detail::rebind::patch_executable(graph_->raw_exec(), found.front());
      if (status == cudaErrorInvalidValue) {
        static_cast<void>(cudaGetLastError());
        graph_->instantiate();
      } else {
        detail::check(status, detail::rebind::exec_call(found.front().kind));
      }
    }
    inputs_ = std::move(inputs); // taken once nothing can fail: a failed scan changes nothing
    nodes_ = std::move(found);
    generation_ = graph_->generation();
  }

  /// liveness::check moves its tracking too; if it refuses, every patch is undone.
  void move_liveness(std::span<const rebinding> moves) {
    auto& live = detail::policy_access::liveness(*graph_, key());
    std::size_t moved = 0;
    try {
      for (; moved < moves.size(); ++moved) {
        const detail::rebind::bound_input& input = inputs_[which_[moved]];
        detail::contract::rebound(live, moves[moved].from, input.bytes, moves[moved].to);
      }
    } catch (...) {
      while (moved-- > 0) { // back to the old addresses, which were checked before
        try {
          detail::contract::rebound(live, moves[moved].to, inputs_[which_[moved]].bytes,
                                    moves[moved].from);
        } catch (...) { // NOLINT(bugprone-empty-catch): the first error is the one to report
        }
      }
      undo(touched_.size());
      throw;
    }
  }

  /// Puts the old words back and re-patches the first `patched` touched nodes with them.
  void undo(std::size_t patched) {
    for (auto entry = undo_.rbegin(); entry != undo_.rend(); ++entry) {
      nodes_[entry->site.node].set_word(entry->site.at, entry->word);
    }
    if (graph_->state() != graph_state::instantiated) {
      return;
    }
    for (std::size_t k = 0; k < patched; ++k) {
      detail::ignore(detail::rebind::patch_executable(graph_->raw_exec(), nodes_[touched_[k]]));
    }
  }

  [[nodiscard]] auto find(std::uintptr_t address) const noexcept {
    return std::find_if(
        inputs_.begin(), inputs_.end(),
        [&](const detail::rebind::bound_input& input) { return input.address == address; });
  }

  detail::rebind::graph_link<Graph> graph_; // null once moved from
  template_patch when_ = template_patch::at_once;
  bool all_inputs_ = false;
  bool held_only_ = false; // one segment of a piecewise graph
  std::uint16_t generation_ = 0;
  std::uint32_t stamp_ = 0;
  std::vector<detail::rebind::bound_input> inputs_;
  std::vector<detail::rebind::patchable_node> nodes_;
  // Scratch of rebind(), kept to spare the allocations.
  std::vector<std::size_t> which_;
  std::vector<undo_entry> undo_;
  std::vector<std::uint32_t> touched_;
};

} // namespace graphcap
