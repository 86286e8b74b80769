// graphcap/piecewise/piecewise_marker.hpp - what cap.mark() returns in a piecewise capture: an
// annotation scope that stays open across breaks (<graphcap/piecewise.hpp>).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/piecewise/detail/open_scopes.hpp>

#include <memory>
#include <utility>

namespace graphcap {

/// A cap.mark() scope of a piecewise capture. It tags the nodes of the segment it was opened in
/// and, opened again at every break while it lives, those of the segments after; an island
/// issued inside it carries its label (island_error says it). It closes when destroyed, or at
/// close(); closed, or outliving the capture, it does nothing.
template <class Marker>
class [[nodiscard("a marker tags the nodes captured while it lives; name it")]] piecewise_marker {
  using scopes = detail::piecewise::open_scopes<Marker>;

public:
  /// Takes `other`'s scope; `other` no longer closes it.
  piecewise_marker(piecewise_marker && other) noexcept
      : scopes_(std::exchange(other.scopes_, {})), place_(other.place_) {}
  piecewise_marker& operator=(piecewise_marker&&) = delete;
  piecewise_marker(const piecewise_marker&) = delete;
  piecewise_marker& operator=(const piecewise_marker&) = delete;
  /// Closes the scope (close()).
  ~piecewise_marker() {
    close();
  }

  /// Closes the scope in the current segment and forgets it: the next segments do not open it.
  void close() noexcept {
    if (const std::shared_ptr<scopes> open = scopes_.lock()) {
      open->erase(place_); // its markers close in their segments (the ended ones: nothing to do)
    }
    scopes_.reset();
  }

  /// True while it is open in a capture in progress.
  [[nodiscard]] bool active() const noexcept {
    const std::shared_ptr<scopes> open = scopes_.lock();
    if constexpr (requires(const Marker& marker) { marker.active(); }) {
      return open && !place_->markers.empty() && place_->markers.back().active();
    } else {
      return false; // annotations off: a scope records nothing
    }
  }

private:
  template <class, class, class>
  friend class piecewise_scope;

  piecewise_marker(const std::shared_ptr<scopes>& open, typename scopes::iterator place) noexcept
      : scopes_(open), place_(place) {}

  std::weak_ptr<scopes> scopes_;
  typename scopes::iterator place_;
};

} // namespace graphcap
