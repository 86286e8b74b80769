// graphcap/liveness/check.hpp - liveness::check: are the graph's inputs still alive?
//
// A graph bakes in the addresses it read at capture. A liveness policy learns the graph's
// external inputs at capture end (and from `scope::input`) and, before each replay, refuses to
// launch if one of them was freed. liveness::off (off.hpp) stores nothing and checks nothing.
//
// liveness::check reads the inputs from the captured graph itself, so it sees every kernel,
// whoever launched it (cuBLAS, another module): the pointer-sized words of each kernel node's
// parameters, memcpy sources and destinations, memset destinations (liveness/detail/scan.hpp).
// An input is identified by its allocation's buffer id (CU_POINTER_ATTRIBUTE_BUFFER_ID): a freed
// allocation has none, and a new allocation at the same address has a new one. Memory the graph
// allocates itself (memory allocation nodes) and ranges given to exclude() are internal, not
// inputs. A refused replay's message is built in liveness/detail/report.hpp. See docs/liveness.md.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/error.hpp>
#include <graphcap/liveness/detail/inputs.hpp>
#include <graphcap/liveness/detail/report.hpp>
#include <graphcap/liveness/detail/scan.hpp>
#include <graphcap/liveness/detail/watch_list.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace graphcap {

namespace liveness {

/// Liveness checking enabled: one pass over the graph at capture end, then one driver query per
/// input allocation (and one weak_ptr test per token) before every replay; while a
/// liveness::free_watch runs, the queries only after a free. A dead input makes replay() throw
/// liveness_error before anything is launched. `liveness::check` names it; a template only so
/// that its bodies compile in the translation units that use it (docs/design.md, "Compile
/// time").
template <class Deferred = void>
class basic_check : public policy_base<policy_kind::liveness> {
public:
  /// How many inputs at most a liveness_error lists one by one.
  static constexpr std::size_t listed_inputs = detail::liveness::liveness_listed_inputs;

  /// Declares an input the graph reaches indirectly (a pointer stored in device memory). Called
  /// by scope::input() during the capture; the pointer must lie in CUDA-allocated memory (device,
  /// pinned host or managed) or in memory the graph allocates itself (then it is not an input).
  void add_input(const void* pointer) { declare(pointer, std::nullopt); }

  /// Declares an input whose life the allocator reports through `token`: the replay is refused
  /// once the token has expired. For sub-allocators (caching allocators, pools) that hand out
  /// pieces of one big allocation, whose buffer id never changes when a piece is freed. The
  /// pointer may be any address (null too); if it lies in a CUDA allocation, that is checked too.
  void add_input(const void* pointer, std::weak_ptr<const void> token) {
    declare(pointer, std::move(token));
  }

  /// Marks [base, base + bytes) as internal memory (e.g. a pool's slab that the graph's own
  /// allocations come from): no input is tracked there. Holds for the graph's current capture,
  /// before or after its end, and is dropped with the rest of the tracking by reset().
  void exclude(const void* base, std::size_t bytes) {
    if (bytes == 0) {
      return;
    }
    const auto begin = reinterpret_cast<std::uintptr_t>(base);
    tracking_.excluded.push_back({begin, begin + bytes});
    tracking_.drop_internal_inputs();
    if (captured_) {
      rebuild_watch_list();
    }
  }

  /// Distinct input addresses tracked for the current capture.
  [[nodiscard]] std::size_t input_count() const noexcept { return tracking_.inputs.size(); }

  /// How many replays since this policy was made asked the driver about every input allocation
  /// (the full check). With a liveness::free_watch running, only the first replay of a capture and
  /// the first after a free do; without one, every replay. Counted on the full check's own path
  /// (which makes driver queries anyway), never on the one-load path: what tests and diagnostics
  /// read to tell the watch's fast path from the fallback.
  [[nodiscard]] std::uint64_t full_checks() const noexcept { return watch_.full_checks(); }

  /// The inputs of several graphs of this policy checked as one, each allocation once (a
  /// piecewise graph's step: core/wing_contract.hpp, liveness_across_segments).
  using step_check = detail::liveness::liveness_step_check<basic_check>;

  // ---- hooks -----------------------------------------------------------------------------------

  /// Resolves cuPointerGetAttribute (once per process) before the capture begins, so that input()
  /// during the capture never makes the entry-point lookup inside it, and replays call it through
  /// a pointer resolved already. A driver without it fails here, before anything began. The
  /// other driver functions are resolved at their first use, at the capture's end.
  void before_capture(cudaStream_t /*stream*/) { resolve_query(); }

  /// The one pass over the captured graph (detail::liveness::liveness_scan_graph), then the
  /// declared inputs are checked and the replay's watch list is built.
  void after_capture_end(cudaGraph_t graph) {
    detail::liveness::liveness_scan_graph(graph, bodies_, tracking_, query_);
    resolve_declared_inputs();
    captured_ = true;
    rebuild_watch_list();
  }

  /// Refuses the replay (liveness_error) if an input's allocation is gone or replaced. While a
  /// liveness::free_watch runs (`<graphcap/free_watch.hpp>`) and nothing was freed since the last
  /// check that passed, the allocations are not asked about again: one load instead.
  void before_replay(cudaStream_t /*stream*/) const {
    if (!watch_.passes(query_)) [[unlikely]] {
      detail::liveness::liveness_diagnose(tracking_.inputs, query_);
      // everything was alive after all: the next replay asks again
    }
  }

  /// A conditional body of the capture in progress (<graphcap/control_flow.hpp> tells): its nodes
  /// are scanned with the graph's, since CUDA lists no body among the graph's nodes.
  void add_body(cudaGraph_t body) { bodies_.push_back(body); }

  /// The last capture's conditional bodies (graphcap::rebinder patches their nodes too).
  [[nodiscard]] std::span<const cudaGraph_t> conditional_bodies() const noexcept { return bodies_; }

  /// graphcap::rebinder moved what the graph reads in [from, from + bytes) to the same offsets
  /// from `to`: the inputs there move with it and are checked there from the next replay on. An
  /// input declared with a liveness token loses the token (it spoke for the old memory). Memory
  /// of the graph's own rebound to outside memory becomes an input. Throws cuda_error, changing
  /// nothing, when a moved input is not in memory CUDA allocated.
  void rebound(const void* from, std::size_t bytes, const void* to) {
    const auto begin = reinterpret_cast<std::uintptr_t>(from);
    const auto target = reinterpret_cast<std::uintptr_t>(to);
    const auto checkable = [&](std::uintptr_t address) {
      const auto buffer_id = detail::liveness::liveness_buffer_id(query_, address);
      if (!buffer_id) [[unlikely]] {
        detail::throw_error(cudaErrorInvalidValue, "graphcap::rebinder::rebind",
                            "the new address " + detail::liveness::liveness_hex(address) +
                                " is not in memory CUDA allocated, so liveness::check cannot "
                                "check it before replays; rebind to device, pinned or managed "
                                "memory");
      }
      return buffer_id;
    };
    // Every query first (one may throw: then nothing has changed), then the moves. A rebind
    // runs at every step of a serving loop: the tracking is patched in place, not copied.
    std::vector<detail::liveness::liveness_input>& inputs = tracking_.inputs;
    moves_.clear();
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (inputs[k].address >= begin && inputs[k].address - begin < bytes) {
        const std::uintptr_t address = target + (inputs[k].address - begin);
        moves_.push_back(
            {k, address, tracking_.is_internal(address) ? std::nullopt : checkable(address)});
      }
    }
    std::optional<detail::liveness::liveness_input> became_input;
    if (moves_.empty() && tracking_.is_internal(begin) && !tracking_.is_internal(target)) {
      became_input.emplace(detail::liveness::liveness_input{
          target, checkable(target), std::nullopt, {{"rebound from the graph's own memory"}}});
      inputs.reserve(inputs.size() + 1);
    }
    for (const input_move& move : moves_) {
      inputs[move.index].address = move.address;
      inputs[move.index].token.reset(); // it spoke for the old memory
      inputs[move.index].buffer_id = move.buffer_id;
    }
    if (became_input) {
      inputs.push_back(std::move(*became_input)); // reserved: cannot throw
    }
    tracking_.drop_internal_inputs();
    rebuild_watch_list();
  }

  /// A failed or abandoned capture: drops its tracking (the resolved query stays).
  void on_capture_abort() noexcept { clear(); }
  /// reset(): drops the tracking; the next replay needs a new capture anyway.
  void on_reset() noexcept { clear(); }

private:
  template <class Check>
  friend class detail::liveness::liveness_step_check;
  [[nodiscard]] const detail::liveness::liveness_watch_list& watch_list() const noexcept {
    return watch_;
  }
  [[nodiscard]] detail::liveness::liveness_pointer_query pointer_query() const noexcept {
    return query_;
  }

  void resolve_query() {
    query_ = detail::driver().pointer_get_attribute.require(detail::liveness::liveness_needs);
  }

  // NOLINTNEXTLINE(performance-unnecessary-value-param): moved into the input's record below
  void declare(const void* pointer, std::optional<std::weak_ptr<const void>> token) {
    resolve_query();
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    if (tracking_.is_internal(address) || (address == 0 && !token)) {
      return;
    }
    std::vector<detail::liveness::liveness_input>& inputs = tracking_.inputs;
    auto known = std::find_if(
        inputs.begin(), inputs.end(),
        [&](const detail::liveness::liveness_input& input) { return input.address == address; });
    std::optional<unsigned long long> buffer_id;
    if ((known == inputs.end() || !known->buffer_id) && address != 0) {
      // Queried now, while the caller vouches for the memory, and before the tracking changes:
      // a query that fails (cuda_error) leaves it as it was. Graph allocations may not resolve
      // during the capture; resolve_declared_inputs() asks again at its end.
      buffer_id = detail::liveness::liveness_buffer_id(query_, address);
    }
    if (known == inputs.end()) {
      inputs.push_back({address, std::nullopt, std::nullopt, {}});
      known = std::prev(inputs.end());
    }
    if (!known->buffer_id) {
      known->buffer_id = buffer_id;
    }
    known->add_use(token ? "declared with input() and a liveness token" : "declared with input()");
    if (token) {
      known->token = std::move(token);
    }
    if (captured_) {
      resolve_declared_inputs();
      rebuild_watch_list();
    }
  }

  /// At capture end: a declared pointer is either a CUDA allocation, internal memory, or covered
  /// by a token; anything else cannot be checked, which the caller must hear about. (After the
  /// capture end, declare() has just queried the one new input: nothing is asked again.)
  void resolve_declared_inputs() {
    tracking_.drop_internal_inputs();
    std::vector<detail::liveness::liveness_input>& inputs = tracking_.inputs;
    for (auto input = inputs.begin(); input != inputs.end(); ++input) {
      if (!captured_ && !input->buffer_id && input->address != 0) {
        input->buffer_id = detail::liveness::liveness_buffer_id(query_, input->address);
      }
      if (!input->buffer_id && !input->token) [[unlikely]] {
        const std::string address = detail::liveness::liveness_hex(input->address);
        inputs.erase(input);
        detail::throw_error(cudaErrorInvalidValue, "graphcap::scope::input(" + address + ")",
                            "the pointer declared with input() is not in memory CUDA allocated "
                            "(device, pinned host or managed memory), or that memory was already "
                            "freed; only CUDA allocations can be checked. For a sub-allocator's "
                            "memory, declare the input with a liveness token");
      }
    }
  }

  void rebuild_watch_list() {
    watch_.restart(); // a new list: the next replay asks about all of it
    for (const detail::liveness::liveness_input& input : tracking_.inputs) {
      if (input.buffer_id) {
        watch_.add(static_cast<CUdeviceptr>(input.address), *input.buffer_id);
      }
      if (input.token) {
        watch_.add_token(*input.token);
      }
    }
    watch_.finish();
  }

  void clear() noexcept {
    bodies_.clear();
    tracking_.clear();
    watch_.clear();
    captured_ = false;
  }

  struct input_move { // rebound(): an input's new address and buffer id, before they are set
    std::size_t index = 0;
    std::uintptr_t address = 0;
    std::optional<unsigned long long> buffer_id;
  };
  std::vector<input_move> moves_; // rebound()'s scratch, kept: a rebind per step allocates nothing

  // Replay reads only this (the allocations, tokens and free epoch it checks), and query_.
  detail::liveness::liveness_watch_list watch_;
  detail::liveness::liveness_pointer_query query_ = nullptr;
  // The tracking behind them, for the error message and for exclude()/add_input() updates.
  detail::liveness::liveness_tracking tracking_;
  std::vector<cudaGraph_t> bodies_; // the capture's conditional bodies, until its end
  bool captured_ = false;
};

/// Liveness checking enabled: the policy to name (basic_check<>).
using check = basic_check<>;

// The optional hooks it offers (core/policy.hpp): conditional bodies are scanned too.
static_assert(liveness_policy<check> && liveness_across_bodies<check> &&
              liveness_that_rebinds<check> && policy_with_bodies<check> &&
              liveness_with_tokens<check, std::weak_ptr<const void>> &&
              liveness_across_segments<check>);

} // namespace liveness
} // namespace graphcap
