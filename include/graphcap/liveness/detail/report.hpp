// graphcap/liveness/detail/report.hpp - the cold half of liveness::check's replay check: which
// inputs are dead, and the liveness_error that lists them.
//
// Reached only after a check before a replay failed (a buffer-id query that did not answer with
// the captured id, or an expired token). Each input is asked again; only
// CUDA_ERROR_INVALID_VALUE means freed, any other failure is a cuda_error (a query that cannot
// answer says nothing about the input).
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>
#include <graphcap/liveness/detail/inputs.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphcap::detail::liveness {

/// How many dead inputs at most a liveness_error lists one by one.
inline constexpr std::size_t liveness_listed_inputs = 8;

/// Why `input` is dead, or nothing if it is alive.
template <class = void>
[[nodiscard]] std::optional<std::string_view> liveness_death_of(const liveness_input& input,
                                                                liveness_pointer_query query) {
  if (input.token && input.token->expired()) {
    return "released by its allocator (its liveness token expired)";
  }
  if (!input.buffer_id) {
    return std::nullopt;
  }
  unsigned long long buffer_id = 0;
  const CUresult status =
      query(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, static_cast<CUdeviceptr>(input.address));
  if (status == CUDA_ERROR_INVALID_VALUE) {
    return "freed"; // the driver knows no allocation there any more
  }
  if (status != CUDA_SUCCESS) {
    // Another failure says nothing about the input: reported as "freed", it would send the
    // caller looking for a free that never happened.
    throw_error(static_cast<cudaError_t>(status), "cuPointerGetAttribute",
                "graphcap's liveness check could not query an input of the graph");
  }
  if (buffer_id != *input.buffer_id) {
    return "replaced (freed, and a new allocation now has the same address)";
  }
  return std::nullopt;
}

/// A dead input and why it is dead.
using liveness_death = std::pair<const liveness_input*, std::string_view>;

/// The liveness_error's message for `dead` (not empty): how many, then each input (at most
/// liveness_listed_inputs) with every way the graph uses it, then what to do.
template <class = void>
std::string liveness_refusal(const std::vector<liveness_death>& dead) {
  std::string text =
      "graphcap: replay refused, nothing was launched: " + std::to_string(dead.size()) +
      (dead.size() == 1 ? " input of the graph is" : " inputs of the graph are") +
      " no longer alive";
  for (std::size_t i = 0; i < dead.size() && i < liveness_listed_inputs; ++i) {
    const auto& [input, death] = dead[i];
    text += "\n  ";
    text += liveness_hex(input->address);
    text += ' ';
    text.append(death);
    text += ": ";
    for (std::size_t u = 0; u < input->uses.size(); ++u) {
      text += u == 0 ? "" : "; ";
      text += input->uses[u].what;
      if (input->uses[u].nodes > 1) {
        text += " (in " + std::to_string(input->uses[u].nodes) + " nodes)";
      }
    }
  }
  if (dead.size() > liveness_listed_inputs) {
    text += "\n  and " + std::to_string(dead.size() - liveness_listed_inputs) + " more";
  }
  text += "\nThe graph reads and writes the addresses it saw at capture: keep its inputs alive "
          "while it may replay, or reset() it and capture again with the new buffers.";
  return text;
}

/// Makes the runtime's context current on this thread (a thread that has made no CUDA runtime
/// call yet has none), clearing any error that leaves.
template <class = void>
void liveness_bind_runtime_context() noexcept {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
  }
}

/// A failed replay check, diagnosed: throws liveness_error listing the dead `inputs`, or
/// cuda_error where a query fails for another reason; returns only if every input turns out
/// alive (the first query failed for another reason, e.g. no context was current on this thread
/// yet, which binding the runtime's one cures).
template <class = void>
GRAPHCAP_COLD void liveness_diagnose(const std::vector<liveness_input>& inputs,
                                     liveness_pointer_query query) {
  liveness_bind_runtime_context();
  std::vector<liveness_death> dead;
  for (const liveness_input& input : inputs) {
    if (const std::optional<std::string_view> death = liveness_death_of(input, query)) {
      dead.emplace_back(&input, *death);
    }
  }
  if (!dead.empty()) {
    throw liveness_error(liveness_refusal(dead));
  }
}

} // namespace graphcap::detail::liveness
