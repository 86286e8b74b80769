// graphcap/piecewise/island_error.hpp - what a piecewise graph's replay throws when one of its
// eager islands throws (<graphcap/piecewise.hpp>).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/error.hpp>

#include <cstddef>
#include <string>

namespace graphcap {

/// An eager island of a piecewise graph threw during replay(): the replay stopped there (the
/// segments after it were not launched), and the graph stays replayable. The island's own
/// exception is nested (std::rethrow_if_nested(error) rethrows it); the message names the
/// island's index and what it threw.
class island_error : public error {
public:
  /// Island `island` (0 is the island after the first segment) threw; `what` is its message,
  /// `scope` the cap.mark() scopes it was issued in ("attention/layer 3"; empty: none).
  island_error(std::size_t island, const std::string& scope, const std::string& what)
      : error("graphcap: island " + std::to_string(island) +
              (scope.empty() ? std::string{} : " (in scope '" + scope + "')") +
              " of the piecewise graph threw during replay(): " + what +
              ". The segments after it were not launched; the graph stays replayable"),
        island_(island), scope_(scope) {}

  /// The index of the island that threw (0: the island after the first segment).
  [[nodiscard]] std::size_t island() const noexcept { return island_; }
  /// The cap.mark() scopes the island was issued in, outermost first ("" if none).
  [[nodiscard]] const std::string& scope() const noexcept { return scope_; }

private:
  std::size_t island_;
  std::string scope_;
};

} // namespace graphcap
