// graphcap/core/update.hpp - what a recapture did to the executable graph.
//
//   graphcap::update_result r = graph.recapture([&](cudaStream_t s) { step(s, batch); });
//   if (!r.updated()) log(r.reason);
//
// Re-instantiating a graph costs about 1 us per node on an H200; cudaGraphExecUpdate, 5 to 8
// times less. basic_graph::recapture() captures the work again and updates the executable graph
// in place when CUDA allows it (same topology, node types and kernel functions; parameters,
// addresses included, may change), and instantiates anew otherwise. The result says which, and
// why.
#pragma once

#include <graphcap/config.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>

namespace graphcap {

/// How the executable graph came to match the new capture.
enum class update_outcome : std::uint8_t {
  updated,        ///< cudaGraphExecUpdate changed the executable graph in place
  reinstantiated, ///< the update was refused (see the reason); a new executable graph was made
  instantiated,   ///< there was no executable graph to update (first capture, or after reset)
  refused,        ///< take_executable(): CUDA refused the update (see the reason); nothing changed
};

/// The outcome's name: "updated", "reinstantiated", "instantiated" or "refused".
[[nodiscard]] constexpr std::string_view to_string(update_outcome outcome) noexcept {
  switch (outcome) {
  case update_outcome::updated:
    return "updated";
  case update_outcome::reinstantiated:
    return "reinstantiated";
  case update_outcome::instantiated:
    return "instantiated";
  case update_outcome::refused:
    return "refused";
  }
  return "unknown";
}

/// The outcome of a recapture, with CUDA's verdict on the update and a sentence saying why it
/// was refused (empty when it was not). Plain values, no allocation: recapture stays as cheap
/// as the update it measures.
struct update_result {
  update_outcome outcome = update_outcome::instantiated;              ///< what happened
  cudaGraphExecUpdateResult cuda_result = cudaGraphExecUpdateSuccess; ///< CUDA's verdict
  std::string_view reason;         ///< a static sentence; empty when updated
  cudaError_t error = cudaSuccess; ///< what cudaGraphExecUpdate returned when it refused

  /// True when the executable graph was updated in place.
  [[nodiscard]] bool updated() const noexcept { return outcome == update_outcome::updated; }
};

namespace detail {

/// Why CUDA refused an update, in words.
[[nodiscard]] constexpr std::string_view update_refusal(cudaGraphExecUpdateResult result) noexcept {
  switch (result) {
  case cudaGraphExecUpdateSuccess:
    return "CUDA refused the update (see error)";
  case cudaGraphExecUpdateErrorTopologyChanged:
    return "the topology changed: nodes or dependencies were added, removed or reordered";
  case cudaGraphExecUpdateErrorNodeTypeChanged:
    return "a node changed type (e.g. a kernel where a copy was)";
  case cudaGraphExecUpdateErrorFunctionChanged:
  case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
    return "a kernel node launches another function, in a way CUDA cannot update";
  case cudaGraphExecUpdateErrorParametersChanged:
    return "a node's parameters changed in a way CUDA cannot update (e.g. a copy between other "
           "kinds of memory, or a 2D memset's shape)";
  case cudaGraphExecUpdateErrorNotSupported:
    return "a node cannot be updated (e.g. a memory allocation node, or a changed child graph)";
  case cudaGraphExecUpdateErrorAttributesChanged:
    return "a node's attributes changed in a way CUDA cannot update";
  case cudaGraphExecUpdateError:
    break;
  }
  return "CUDA refused the update (see error)";
}

} // namespace detail
} // namespace graphcap
