// graphcap/liveness/declared_inputs.hpp - what users tell liveness::check (liveness/check.hpp,
// the policy that refuses to replay a graph whose inputs were freed: docs/liveness.md): inputs
// left out, inputs added. <graphcap/graphcap.hpp> includes it; the lean core
// (<graphcap/basic_graph.hpp>) does not, and with it none of the driver API.
//
//   graphcap::graph_with<graphcap::liveness::check> g;
//   g.capture(stream, [&](cudaStream_t s) { scale<<<blocks, threads, 0, s>>>(input, n); });
//   cudaFree(input);
//   g.replay(stream); // throws graphcap::liveness_error, naming the freed input; nothing runs
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/liveness/check.hpp>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace graphcap {
namespace detail {
template <class Graph>
constexpr void require_liveness_check() noexcept {
  static_assert(std::is_same_v<typename Graph::liveness_type, graphcap::liveness::check>,
                "graphcap: exclude_from_liveness() and add_liveness_input() need a graph with "
                "liveness::check (graph_with<graphcap::liveness::check, ...>)");
}

/// The liveness wing's door to a graph's Liveness policy (core/basic_graph.hpp's
/// policy_access, behind the key).
struct declared_inputs : core_extension {
  template <class Graph>
  static auto& of(Graph& graph) noexcept {
    require_liveness_check<Graph>();
    return policy_access::liveness(graph, key());
  }
};
} // namespace detail

/// Leaves [base, base + bytes) out of `graph`'s liveness check, before or after its capture
/// ended: what a kernel-parameter word merely equal to an address there made an input is
/// dropped, and nothing there is tracked until reset() or a recapture (docs/liveness.md).
template <class Graph>
void exclude_from_liveness(Graph& graph, const void* base, std::size_t bytes) {
  detail::declared_inputs::of(graph).exclude(base, bytes);
}

/// Declares an input `graph` reaches indirectly, after its capture ended (during it:
/// scope::input()): it is checked before every later replay. cuda_error if the driver cannot be
/// asked about it (the tracking then stays as it was).
template <class Graph>
void add_liveness_input(Graph& graph, const void* pointer) {
  detail::declared_inputs::of(graph).add_input(pointer);
}

/// The same, for memory whose life a sub-allocator reports through `token` (docs/liveness.md).
template <class Graph>
void add_liveness_input(Graph& graph, const void* pointer, std::weak_ptr<const void> token) {
  detail::declared_inputs::of(graph).add_input(pointer, std::move(token));
}

} // namespace graphcap
