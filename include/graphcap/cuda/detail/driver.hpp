// graphcap/cuda/detail/driver.hpp - the CUDA driver functions graphcap calls, each resolved on its
// first use: liveness asks pointer attributes, node types and kernel parameters, annotations
// capture and graph queries and kernel names, the rebinder sets kernel nodes' parameters.
//
// graphcap never links the driver library (-lcuda): a binary linked with it would not even start
// on a machine without a driver. Each driver function is a driver_function, fetched through the
// runtime's cudaGetDriverEntryPointByVersion the first time it is used, with the ABI of the CUDA
// version its PFN type names, and cached in an atomic pointer: once resolved, a use is one load,
// with no lock. A function the driver lacks fails only the feature that uses it (require(), whose
// message names the feature and the function), or lets a feature that can go without it degrade
// (find(), cached(): null). A failed lookup is not cached: the next use asks again.
#pragma once

#include <graphcap/config.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <string_view>

namespace graphcap::detail {

/// How one lookup of a driver function ended: the function (null unless found), the status of
/// cudaGetDriverEntryPointByVersion itself, and the driver's answer.
struct driver_lookup {
  void* function = nullptr;
  cudaError_t status = cudaSuccess;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
};

/// Looks `symbol` up with the ABI of CUDA `version` (12030: 12.3). A failed lookup clears the
/// runtime's last error it set: graphcap leaves no status of its own behind.
GRAPHCAP_COLD inline driver_lookup look_up_driver_function(const char* symbol,
                                                           unsigned int version) noexcept {
  driver_lookup lookup;
  lookup.status = cudaGetDriverEntryPointByVersion(symbol, &lookup.function, version,
                                                   cudaEnableDefault, &lookup.found);
  if (lookup.status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
  }
  if (lookup.status != cudaSuccess || lookup.found != cudaDriverEntryPointSuccess) {
    lookup.function = nullptr;
  }
  return lookup;
}

/// "<needs> <symbol> (CUDA X.Y driver or newer)", e.g. "graphcap's annotations need cuFuncGetName
/// (CUDA 12.3 driver or newer)": how every message about a missing driver function begins.
inline std::string driver_function_needed(std::string_view needs, const char* symbol,
                                          unsigned int version) {
  std::string text{needs};
  text += ' ';
  text += symbol;
  text += " (CUDA " + std::to_string(version / 1000) + '.' + std::to_string(version % 1000 / 10) +
          " driver or newer)";
  return text;
}

/// Throws the cuda_error for a lookup that found nothing: cudaErrorSymbolNotFound (or the
/// lookup's own failure), call "cudaGetDriverEntryPointByVersion(<symbol>)", and a hint that
/// names the feature (`needs`), the function and the driver it takes.
GRAPHCAP_COLD [[noreturn]] inline void throw_missing_driver_function(const driver_lookup& lookup,
                                                                     const char* symbol,
                                                                     unsigned int version,
                                                                     std::string_view needs) {
  const std::string call = std::string{"cudaGetDriverEntryPointByVersion("} + symbol + ")";
  std::string hint = driver_function_needed(needs, symbol, version);
  if (lookup.status != cudaSuccess) {
    hint += ", and the CUDA runtime could not look it up";
    if (const std::string_view more = hint_for(lookup.status); !more.empty()) {
      hint += ": ";
      hint += more;
    }
    throw_error(lookup.status, call, hint);
  }
  hint += lookup.found == cudaDriverEntryPointVersionNotSufficent
              ? "; the installed CUDA driver is older"
              : "; the installed CUDA driver does not provide it";
  throw_error(cudaErrorSymbolNotFound, call, hint);
}

/// How a driver function named by no feature words its need (the call operator's).
inline constexpr std::string_view graphcap_needs = "graphcap needs";

/// One driver function. `Function` is its PFN type and `Version` the CUDA version in that type's
/// name (PFN_cuFuncGetName_v12030: 12030), which selects the ABI it is looked up with, even under
/// a newer driver. Thread-safe: threads that resolve it at once store the same pointer.
struct driver_testing;

template <class Function, unsigned int Version>
class driver_function {
public:
  /// The CUDA version whose ABI of the function is asked for.
  static constexpr unsigned int version = Version;

  /// `symbol`: the driver's name of the function, e.g. "cuFuncGetName" (a string literal).
  explicit constexpr driver_function(const char* symbol) noexcept : symbol_(symbol) {}

  /// The driver's name of the function.
  [[nodiscard]] const char* symbol() const noexcept { return symbol_; }

  /// The function if it is resolved already, else null; never looks it up (for code that must
  /// make no lookup, e.g. during a capture, after find() resolved it before).
  [[nodiscard]] Function cached() const noexcept {
    return resolved_.load(std::memory_order_acquire);
  }

  /// The function, looked up at the first call; null where the driver lacks it or the lookup
  /// fails (asked again at the next call), for features that degrade without it.
  [[nodiscard]] Function find() const noexcept {
    if (const Function function = cached()) [[likely]] {
      return function;
    }
    return keep(look_up_driver_function(symbol_, Version));
  }

  /// The function, looked up at the first call; where it is missing, throws cuda_error whose
  /// hint begins "<needs> <symbol> (CUDA X.Y driver or newer)" (`needs`: "graphcap's liveness
  /// check needs"), for features that cannot work without it.
  [[nodiscard]] Function require(std::string_view needs) const {
    if (const Function function = cached()) [[likely]] {
      return function;
    }
    const driver_lookup lookup = look_up_driver_function(symbol_, Version);
    if (const Function function = keep(lookup)) {
      return function;
    }
    throw_missing_driver_function(lookup, symbol_, Version, needs);
  }

  /// Calls the function, resolving it first (like require(graphcap_needs)).
  template <class... Args>
  CUresult operator()(Args... args) const {
    return require(graphcap_needs)(args...);
  }

private:
  // The tests that change which functions the test double's driver provides make graphcap look
  // them up again (test/support/driver_testing.hpp); nothing in graphcap forgets one.
  friend struct driver_testing;

  Function keep(const driver_lookup& lookup) const noexcept {
    // NOLINTNEXTLINE: how driver entry points are typed
    const auto function = reinterpret_cast<Function>(lookup.function);
    if (function != nullptr) {
      resolved_.store(function, std::memory_order_release);
    }
    return function;
  }

  const char* symbol_;
  mutable std::atomic<Function> resolved_{nullptr};
};

// The PFN type, its version and the symbol are pasted from one name and one number, so that a
// member's ABI version always is the one its type names.
// NOLINTBEGIN(bugprone-macro-parentheses): `member` is the name of the member declared
// clang-format off
#define GRAPHCAP_DRIVER_FUNCTION(member, symbol, version) \
  driver_function<PFN_##symbol##_v##version, version> member{#symbol}
// clang-format on
// NOLINTEND(bugprone-macro-parentheses)

/// The driver functions graphcap uses, each with the ABI of the version in its type's name. The
/// members are callable (driver().graph_node_get_type(node, &type)); see driver_function for the
/// forms that say how a missing function is handled.
struct driver_api {
  GRAPHCAP_DRIVER_FUNCTION(pointer_get_attribute, cuPointerGetAttribute, 4000);
  GRAPHCAP_DRIVER_FUNCTION(graph_kernel_node_get_params, cuGraphKernelNodeGetParams, 12000);
  GRAPHCAP_DRIVER_FUNCTION(func_get_param_info, cuFuncGetParamInfo, 12040);
  GRAPHCAP_DRIVER_FUNCTION(func_get_name, cuFuncGetName, 12030);
  GRAPHCAP_DRIVER_FUNCTION(kernel_get_function, cuKernelGetFunction, 12000);
  GRAPHCAP_DRIVER_FUNCTION(graph_node_get_type, cuGraphNodeGetType, 10000);
  GRAPHCAP_DRIVER_FUNCTION(stream_get_capture_info, cuStreamGetCaptureInfo, 12030);
  GRAPHCAP_DRIVER_FUNCTION(graph_node_get_dependent_nodes, cuGraphNodeGetDependentNodes, 12030);
  GRAPHCAP_DRIVER_FUNCTION(graph_get_root_nodes, cuGraphGetRootNodes, 10000);
  GRAPHCAP_DRIVER_FUNCTION(graph_get_nodes, cuGraphGetNodes, 10000);
  GRAPHCAP_DRIVER_FUNCTION(graph_kernel_node_set_params, cuGraphKernelNodeSetParams, 12000);
  GRAPHCAP_DRIVER_FUNCTION(graph_exec_kernel_node_set_params, cuGraphExecKernelNodeSetParams,
                           12000);
};

#undef GRAPHCAP_DRIVER_FUNCTION

/// The process's driver functions. Nothing is looked up here: each member resolves itself at its
/// first use. Constant-initialized: no guard, no static-initialization order to fear.
inline const driver_api& driver() noexcept {
  static constinit const driver_api table{};
  return table;
}

} // namespace graphcap::detail
