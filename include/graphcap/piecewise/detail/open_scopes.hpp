// graphcap/piecewise/detail/open_scopes.hpp - the annotation scopes open in a piecewise capture,
// so that a scope open at a break is opened again in the next segment, and an island knows the
// scopes it sits in.
#pragma once

#include <graphcap/config.hpp>

#include <list>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::piecewise {

/// One cap.mark() scope of a piecewise capture while it lives.
template <class Marker>
struct open_scope {
  std::string label; ///< its name (the "name" value), or its first key=value
  /// Its key/value pairs (empty for a scope opened by name alone), owned here, so that the next
  /// segment can open it again after the caller's strings are gone.
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<Marker> markers; ///< one per segment it was open in, the current one last
};

/// The open scopes, outermost first; a list, so that each keeps its place while others close.
template <class Marker>
using open_scopes = std::list<open_scope<Marker>>;

/// "attention/layer 3": the labels of the open scopes, outermost first; empty when none is open.
template <class Marker>
std::string scope_path(const open_scopes<Marker>& scopes) {
  std::string path;
  for (const open_scope<Marker>& scope : scopes) {
    if (!path.empty()) {
      path += '/';
    }
    path += scope.label;
  }
  return path;
}

} // namespace graphcap::detail::piecewise
