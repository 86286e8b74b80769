// graphcap/piecewise/detail/islands.hpp - what a piecewise graph keeps of an island: a callable
// taking the replay's stream, or, for a piecewise_graph<Graph, Context>, the stream and the
// replay's context (an island written for the stream alone is kept as one that ignores it).
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/piecewise/island_error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace graphcap::detail::piecewise {

/// An island as kept: void(cudaStream_t) without a context (the lean form), void(cudaStream_t,
/// Context&) with one.
template <class Context>
struct island_slot {
  using type = std::function<void(cudaStream_t, Context&)>;
};
template <>
struct island_slot<void> {
  using type = std::function<void(cudaStream_t)>;
};

/// Whether `Island` can be kept for a graph of `Context`: it takes the stream, or (with a
/// context) the stream and the context.
template <class Island, class Context>
inline constexpr bool takes_context = false;
template <class Island, class Context>
requires(!std::is_void_v<Context>) inline constexpr bool takes_context<Island, Context> =
    std::is_invocable_v<Island&, cudaStream_t, Context&>;

/// `island` as the graph keeps it. The callable forms are checked here, at the capture, with
/// one message per mistake.
template <class Context, class Island>
typename island_slot<Context>::type make_island(Island&& island) {
  using callable = std::remove_cvref_t<Island>;
  constexpr bool stream_only = std::is_invocable_v<callable&, cudaStream_t>;
  constexpr bool with_context = takes_context<callable, Context>;
  if constexpr (std::is_void_v<Context>) {
    static_assert(stream_only,
                  "graphcap: eager(island) needs a callable taking the replay's stream "
                  "(cudaStream_t): it runs at every replay, on the stream replay() was given. An "
                  "island taking a per-replay context needs a piecewise_graph<Graph, Context>");
    return std::forward<Island>(island);
  } else {
    static_assert(stream_only || with_context,
                  "graphcap: eager(island) on a piecewise_graph<Graph, Context> needs a callable "
                  "taking (cudaStream_t, Context&), the replay's stream and the context "
                  "replay(stream, ctx) was given, or (cudaStream_t) alone: the island's context "
                  "parameter is not the graph's Context");
    if constexpr (with_context) {
      return std::forward<Island>(island);
    } else {
      return [run = callable(std::forward<Island>(island))](
                 cudaStream_t stream, Context& /*context*/) mutable { run(stream); };
    }
  }
}

/// Runs island `k` (which sits in the mark() scopes `scopes`) on `stream`, handed `ctx...` (the
/// context or nothing). A throw becomes island_error, the island's exception nested.
template <class Island, class... Contexts>
void run_island(Island& island, std::size_t k, const std::string& scopes, cudaStream_t stream,
                Contexts&... ctx) {
  try {
    island(stream, ctx...);
  } catch (const std::exception& failure) {
    std::throw_with_nested(island_error(k, scopes, failure.what()));
  } catch (...) {
    std::throw_with_nested(island_error(k, scopes, "an exception not derived from std::exception"));
  }
}

} // namespace graphcap::detail::piecewise
