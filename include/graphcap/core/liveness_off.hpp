// graphcap/core/liveness_off.hpp - liveness::off, the lean Liveness policy: no check.
//
// liveness::check (<graphcap/liveness.hpp>) is the policy that refuses to replay a graph whose
// inputs were freed.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>

#include <cstddef>

namespace graphcap::liveness {

/// Liveness checking disabled: no storage, no call before replay.
struct off : policy_base<policy_kind::liveness> {
  /// Nothing is tracked.
  constexpr void add_input(const void* /*pointer*/) noexcept {}
  /// Nothing is tracked, whatever the token (liveness_with_tokens).
  template <class Token>
  constexpr void add_input(const void* /*pointer*/, const Token& /*token*/) noexcept {}
  /// Nothing is tracked.
  constexpr void exclude(const void* /*base*/, std::size_t /*bytes*/) noexcept {}
};

} // namespace graphcap::liveness
