// graphcap/core/detail/diagnosis_hook.hpp - where capture diagnostics (<graphcap/diagnostics.hpp>)
// plug into the core: a table of functions that only diagnostics.hpp fills in, read by the
// cold error path of a failed capture and by annot::on's scopes.
//
// The core never names CUPTI: it holds one pointer, null unless a graphcap::capture_diagnostics
// is alive, in zero-initialized storage (no constructor, no guard), and reads it only where a
// capture has failed (capture::failure_hint, cold). A program that never includes
// diagnostics.hpp compiles no diagnostics code at all; the symbol check (test/symbols) shows the
// lean capture and replay reaching nothing more, and the replay's hot path unchanged.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace graphcap::detail {

/// What capture diagnostics offer the core while they are on.
struct diagnosis_hooks {
  /// The text naming what broke the capture on `stream` (still running there, or the last this
  /// thread ended there) that failed with `status`; empty if there is nothing to say. `named` is
  /// set when it names the call that broke it (the generic hint then adds nothing). Makes no CUDA
  /// call; may throw std::bad_alloc.
  std::string (*explain_end_failure)(cudaError_t status, cudaStream_t stream, bool& named);
  /// annot::on opened the scope `index` of the capture begun on `capture_stream`, labelled
  /// `label` (its "name" value, or its first key=value).
  void (*scope_opened)(cudaStream_t capture_stream, std::uint32_t index,
                       std::string_view label) noexcept;
  /// annot::on closed the scope `index` of that capture.
  void (*scope_closed)(cudaStream_t capture_stream, std::uint32_t index) noexcept;
};

/// The hooks of the capture diagnostics switched on now; null while none is alive. Read and
/// written only through diagnosis() and install_diagnosis(), atomically, with the compiler's
/// builtins (GCC's, which Clang and nvcc's host compilers share) rather than std::atomic: every
/// lean translation unit includes this header, and <atomic> costs a .cu file about a second of
/// compile time (docs/benchmarks.md, compile time).
inline const diagnosis_hooks* installed_diagnosis = nullptr;

/// The installed hooks, or null (one acquire load, pairing with the release that published
/// them: the hooks are immutable once published, and stay valid for the life of the process).
[[nodiscard]] inline const diagnosis_hooks* diagnosis() noexcept {
  return __atomic_load_n(&installed_diagnosis, __ATOMIC_ACQUIRE);
}

/// Publishes `hooks` (null: none) for diagnosis() to read.
inline void install_diagnosis(const diagnosis_hooks* hooks) noexcept {
  __atomic_store_n(&installed_diagnosis, hooks, __ATOMIC_RELEASE);
}

} // namespace graphcap::detail
