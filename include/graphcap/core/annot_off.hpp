// graphcap/core/annot_off.hpp - annot::off, the lean Annot policy: annotations disabled.
//
// `scope::mark("attention")` stays valid in every configuration: with annotations off it returns
// an empty RAII marker and compiles to nothing, so code written for annotated graphs builds
// unchanged. annot::on (<graphcap/annotations.hpp>) is the policy that records.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
#include <graphcap/fwd.hpp>

#include <cuda_runtime_api.h>

#include <initializer_list>
#include <string_view>

namespace graphcap::annot {

/// Annotations disabled: `mark` returns an empty marker and records nothing.
struct off : policy_base<policy_kind::annot> {

  /// What `mark` returns when annotations are off: an empty RAII object, so that code written
  /// for annotated graphs compiles unchanged and costs nothing.
  struct [[nodiscard("a marker tags the nodes captured while it lives; name it")]] marker {
    // The destructor is user-provided (and empty) so that `auto region = cap.mark("x");` draws
    // no unused-variable warning, as the marker of an enabled policy would not. It still
    // compiles to nothing.
    /// Tags nothing.
    constexpr marker() noexcept = default;
    /// Tags nothing.
    constexpr marker(const marker&) noexcept = default;
    /// Tags nothing.
    constexpr marker(marker &&) noexcept = default;
    /// Tags nothing.
    constexpr marker& operator=(const marker&) noexcept = default;
    /// Tags nothing.
    constexpr marker& operator=(marker&&) noexcept = default;
    constexpr ~marker() {} // NOLINT(modernize-use-equals-default): see above
  };

  /// No scope: the empty marker.
  constexpr marker mark(cudaStream_t /*stream*/, std::string_view /*name*/) noexcept { return {}; }
  /// No scope: the empty marker.
  constexpr marker mark(cudaStream_t /*stream*/,
                        std::initializer_list<annotation_entry> /*entries*/) noexcept {
    return {};
  }
};

} // namespace graphcap::annot
