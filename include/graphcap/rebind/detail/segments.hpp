// graphcap/rebind/detail/segments.hpp - what the rebinder of a piecewise graph adds to the
// segments' own rebinders: its refusals, and the segments whose liveness watches an input that
// their nodes do not hold (declared with cap.input()), whose tracking moves with the input too.
#pragma once

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/policy.hpp>
#include <graphcap/core/wing_contract.hpp>
#include <graphcap/error.hpp>
#include <graphcap/rebind/detail/sites.hpp>
#include <graphcap/rebind/rebind_error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graphcap::detail::rebind {

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_held_by_no_segment(std::uintptr_t input, std::size_t bytes,
                                                         std::size_t segments) {
  throw rebind_error(
      "graphcap::rebinder: no segment of the piecewise graph (" + std::to_string(segments) +
      " segment(s)) holds an address in [" + rebind_hex(input) + ", +" + std::to_string(bytes) +
      " bytes): no kernel parameter, memcpy or memset node names input " + rebind_hex(input) +
      ". Memory only an island reads is not in any graph: hand the island its address at each "
      "replay (piecewise_graph<Graph, Context> and replay(stream, ctx)), or read it through a "
      "pointer the island is given");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_not_kept(const char* what) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what +
                    ": the piecewise graph's segments keep no template. Construct it with "
                    "graphcap::keep_graph (piecewise_graph<...> step{graphcap::keep_graph}) and "
                    "capture it");
}

/// An input outside the pool's slabs that a segment's nodes do not hold: that segment's liveness
/// moves with it (a no-op where it tracks nothing there).
struct unheld_input {
  std::size_t segment; ///< the segment's index in the piecewise graph
  std::size_t input;   ///< the input's index in the rebinder's registry
};

/// The liveness policy of a segment graph.
template <class Graph>
using segment_liveness = std::remove_cvref_t<decltype(policy_access::liveness(
    std::declval<Graph&>(), std::declval<policy_key>()))>;

/// For each segment (`segments`: the piecewise graph's), the registered inputs outside the
/// pool's slabs (there liveness tracks nothing: the graph's own memory) that its nodes do not
/// hold (`held_in[i]`: the segments holding input i). Empty when the liveness cannot rebind.
template <class Graph>
std::vector<unheld_input> unheld_inputs(const std::vector<std::unique_ptr<Graph>>& segments,
                                        const std::vector<bound_input>& registered,
                                        const std::vector<std::vector<std::size_t>>& held_in,
                                        policy_key key) {
  std::vector<unheld_input> unheld;
  if constexpr (liveness_that_rebinds<segment_liveness<Graph>>) {
    std::vector<allocation_range> slabs;
    contract::for_each_slab(policy_access::pool(*segments.front(), key),
                            [&](const void* base, std::size_t bytes) {
                              slabs.push_back({reinterpret_cast<std::uintptr_t>(base), bytes});
                            });
    for (std::size_t i = 0; i < registered.size(); ++i) {
      const std::uintptr_t address = registered[i].address;
      if (std::any_of(slabs.begin(), slabs.end(), [&](const allocation_range& slab) {
            return address >= slab.base && address - slab.base < slab.bytes;
          })) {
        continue;
      }
      for (std::size_t k = 0; k < segments.size(); ++k) {
        if (std::find(held_in[i].begin(), held_in[i].end(), k) == held_in[i].end()) {
          unheld.push_back({k, i});
        }
      }
    }
  }
  return unheld;
}

/// A rebind's `moves` (input `which[i]` of `inputs` each) in the liveness of the segments that
/// watch them without holding them (`unheld`), so that liveness and rebinding agree on where the
/// input is; if one refuses (a new address liveness cannot check), those moved go back.
template <class Graph, class Move>
void move_unheld_liveness(const std::vector<std::unique_ptr<Graph>>& segments,
                          const std::vector<unheld_input>& unheld, std::span<const Move> moves,
                          const std::vector<std::size_t>& which,
                          const std::vector<bound_input>& inputs, policy_key key) {
  if constexpr (liveness_that_rebinds<segment_liveness<Graph>>) {
    std::vector<std::pair<std::size_t, std::size_t>> moved; // (segment, move)
    try {
      for (std::size_t i = 0; i < moves.size(); ++i) {
        for (const unheld_input& each : unheld) {
          if (each.input == which[i]) {
            contract::rebound(policy_access::liveness(*segments[each.segment], key), moves[i].from,
                              inputs[which[i]].bytes, moves[i].to);
            moved.emplace_back(each.segment, i);
          }
        }
      }
    } catch (...) {
      for (auto entry = moved.rbegin(); entry != moved.rend(); ++entry) {
        try {
          contract::rebound(policy_access::liveness(*segments[entry->first], key),
                            moves[entry->second].to, inputs[which[entry->second]].bytes,
                            moves[entry->second].from);
        } catch (...) { // NOLINT(bugprone-empty-catch): the first error is the one to report
        }
      }
      throw;
    }
  }
}

} // namespace graphcap::detail::rebind
