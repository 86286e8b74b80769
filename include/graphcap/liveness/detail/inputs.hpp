// graphcap/liveness/detail/inputs.hpp - what liveness::check tracks of one capture: the graph's
// inputs (each with its allocation's buffer id and every way the graph uses it), the graph's own
// allocations and the excluded ranges, and the driver query that tells an allocation's id.
//
// The scan of the captured graph (liveness_scan.hpp) fills it, the refusal (liveness_report.hpp)
// reads it, and liveness::check (liveness/check.hpp) owns it.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphcap::detail::liveness {

/// How the liveness check words its need of a driver function (driver_function::require).
inline constexpr std::string_view liveness_needs = "graphcap's liveness check needs";

/// cuPointerGetAttribute, resolved before the capture began: the one driver function the replay
/// calls.
using liveness_pointer_query = PFN_cuPointerGetAttribute_v4000;

/// [begin, end) of addresses.
struct liveness_range {
  std::uintptr_t begin;
  std::uintptr_t end;

  /// Whether `address` lies in the range.
  [[nodiscard]] bool contains(std::uintptr_t address) const noexcept {
    return address >= begin && address < end;
  }
};

/// One way the graph uses an input ("memcpy source", "kernel k, parameter 0 (offset 0)"), and in
/// how many nodes.
struct liveness_use {
  std::string what;
  std::size_t nodes = 1;
};

/// An input address of the graph and what is known of it.
struct liveness_input {
  std::uintptr_t address = 0;
  std::optional<unsigned long long> buffer_id; // none: not (yet) known as a CUDA allocation
  std::optional<std::weak_ptr<const void>> token;
  std::vector<liveness_use> uses;

  /// Counts one more use described by `what`.
  template <class = void>
  void add_use(std::string what) {
    const auto same = std::find_if(uses.begin(), uses.end(),
                                   [&](const liveness_use& use) { return use.what == what; });
    if (same != uses.end()) {
      ++same->nodes;
    } else {
      uses.push_back({std::move(what)});
    }
  }
};

/// "0x7f3a52000000".
template <class = void>
std::string liveness_hex(std::uintptr_t address) {
  char digits[2 * sizeof address + 2] = {'0', 'x'};
  const auto end = std::to_chars(digits + 2, digits + sizeof digits, address, 16).ptr;
  return {digits, end};
}

/// The cuda_error for a buffer-id query that failed with another status than "no allocation".
template <class = void>
GRAPHCAP_COLD [[noreturn]] void liveness_query_failed(CUresult status, std::uintptr_t address) {
  throw_error(static_cast<cudaError_t>(status), "cuPointerGetAttribute",
              "graphcap's liveness check could not ask the driver whether " +
                  liveness_hex(address) + " is CUDA memory that it must check before replays");
}

/// The buffer id of the allocation holding `address`; none if CUDA knows no allocation there.
/// Only CUDA_ERROR_INVALID_VALUE, the driver's answer for an address it has no allocation at,
/// means that. Any other failure (no context, a driver not initialized or shutting down) says
/// nothing about the address: taken for "not CUDA memory" it would leave an input of the graph
/// silently unchecked, so it is a cuda_error instead.
template <class = void>
[[nodiscard]] std::optional<unsigned long long> liveness_buffer_id(liveness_pointer_query query,
                                                                   std::uintptr_t address) {
  unsigned long long buffer_id = 0;
  const CUresult status =
      query(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, static_cast<CUdeviceptr>(address));
  if (status == CUDA_ERROR_INVALID_VALUE) {
    return std::nullopt;
  }
  if (status != CUDA_SUCCESS) [[unlikely]] {
    liveness_query_failed(status, address);
  }
  return buffer_id;
}

/// What liveness::check tracks for the graph's current capture.
struct liveness_tracking {
  std::vector<liveness_input> inputs;
  std::vector<liveness_range> internal; // the graph's own allocations
  std::vector<liveness_range> excluded; // exclude()

  /// Whether `address` is internal memory (the graph's own, or excluded): never an input.
  template <class = void>
  [[nodiscard]] bool is_internal(std::uintptr_t address) const noexcept {
    const auto holds = [&](const liveness_range& range) { return range.contains(address); };
    return std::any_of(internal.begin(), internal.end(), holds) ||
           std::any_of(excluded.begin(), excluded.end(), holds);
  }

  /// Drops the inputs that lie in internal memory.
  template <class = void>
  void drop_internal_inputs() {
    std::erase_if(inputs, [&](const liveness_input& input) { return is_internal(input.address); });
  }

  /// Forgets everything.
  void clear() noexcept {
    inputs.clear();
    internal.clear();
    excluded.clear();
  }
};

} // namespace graphcap::detail::liveness
