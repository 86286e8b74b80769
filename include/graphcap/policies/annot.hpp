// graphcap/policies/annot.hpp - the Annot policy: named scopes that tag captured graph nodes.
//
// `scope::mark("attention")` returns an RAII marker; the nodes captured while it lives are tagged
// with its name (or key/value pairs). annot::off keeps the call site valid in every configuration
// and compiles it to nothing: the marker is an empty object, nothing is stored or called.
#pragma once

#include <graphcap/detail/no_hooks.hpp>
#include <graphcap/detail/policy_category.hpp>

#include <concepts>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graphcap {

/// One key/value pair of an annotation, e.g. {"layer", "3"}.
using annotation_entry = std::pair<std::string_view, std::string_view>;

/// An Annot policy: lifecycle hooks plus `mark`, which opens a tagging scope on a capture stream.
template <class A>
concept annotation_policy = detail::has_policy_category<A> &&
    std::same_as<typename A::policy_category, detail::annot_category> &&
    std::is_nothrow_move_constructible_v<A> && std::is_nothrow_move_assignable_v<A> &&
    requires(A& annot, cudaStream_t stream, cudaGraph_t graph, cudaGraphExec_t exec,
             std::string_view name, std::initializer_list<annotation_entry> entries) {
  annot.mark(stream, name);
  annot.mark(stream, entries);
  annot.before_capture(stream);
  annot.after_capture_begin(stream);
  annot.before_capture_end(stream);
  annot.after_capture_end(graph);
  annot.on_capture_abort();
  annot.after_instantiate(exec);
  annot.before_replay(stream);
  annot.on_reset();
};

namespace annot {

/// Annotations disabled: `mark` returns an empty marker and records nothing.
struct off : detail::no_hooks<detail::annot_category> {

  /// What `mark` returns when annotations are off: an empty RAII object, so that code written
  /// for annotated graphs compiles unchanged and costs nothing.
  struct [[nodiscard("a marker tags the nodes captured while it lives; name it")]] marker {
    // The destructor is user-provided (and empty) so that `auto region = cap.mark("x");` draws
    // no unused-variable warning, as the marker of an enabled policy would not. It still
    // compiles to nothing.
    constexpr marker() noexcept = default;
    constexpr marker(const marker&) noexcept = default;
    constexpr marker(marker &&) noexcept = default;
    constexpr marker& operator=(const marker&) noexcept = default;
    constexpr marker& operator=(marker&&) noexcept = default;
    constexpr ~marker() {} // NOLINT(modernize-use-equals-default): see above
  };

  constexpr marker mark(cudaStream_t /*stream*/, std::string_view /*name*/) noexcept { return {}; }
  constexpr marker mark(cudaStream_t /*stream*/,
                        std::initializer_list<annotation_entry> /*entries*/) noexcept {
    return {};
  }
};

} // namespace annot
} // namespace graphcap
