// graphcap/piecewise/bridge_error.hpp - what deallocate() in a piecewise capture throws for a
// block that crosses a break (a bridge) and cannot be freed there (<graphcap/piecewise.hpp>).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/error.hpp>

#include <cstddef>
#include <string>

namespace graphcap {

/// cap.deallocate(block) in a piecewise capture, refused: the block was allocated in another
/// segment of the capture (a bridge across a break) and is freed a second time, or in a segment
/// before the one that allocated it (a pointer kept from the capture a recapture replaces). The
/// message names the segments; nothing was freed, and the capture fails as for any exception of
/// its work (the graph is left empty).
class bridge_error : public error {
public:
  /// What was wrong with the free.
  enum class reason : unsigned char {
    freed_twice,      ///< a segment freed the block already: already_freed_in()
    before_allocation ///< the block belongs to a later segment than the one freeing it
  };

  /// `block`, allocated in segment `allocated_in`, freed in segment `freed_in`; `earlier_free`:
  /// the segment that freed it first (freed_twice).
  bridge_error(reason why, std::size_t allocated_in, std::size_t freed_in,
               std::size_t earlier_free = 0)
      : error(message(why, allocated_in, freed_in, earlier_free)), reason_(why),
        allocated_in_(allocated_in), freed_in_(freed_in), earlier_free_(earlier_free) {}

  /// What was wrong.
  [[nodiscard]] reason why() const noexcept { return reason_; }
  /// The segment that allocated the block.
  [[nodiscard]] std::size_t allocated_in() const noexcept { return allocated_in_; }
  /// The segment whose deallocate() was refused.
  [[nodiscard]] std::size_t freed_in() const noexcept { return freed_in_; }
  /// The segment that freed the block first (freed_twice; else 0).
  [[nodiscard]] std::size_t already_freed_in() const noexcept { return earlier_free_; }

private:
  static std::string message(reason why, std::size_t allocated, std::size_t freed,
                             std::size_t earlier) {
    const std::string head = "graphcap: deallocate() in segment " + std::to_string(freed) +
                             " of a piecewise capture was given a block allocated in segment " +
                             std::to_string(allocated);
    if (why == reason::freed_twice) {
      return head + ", which segment " + std::to_string(earlier) +
             " deallocated already: free a block once (nothing was freed)";
    }
    return head + ", a later segment: a block can be freed in the segment that allocated it or a "
                  "later one; a pointer kept from the capture before a recapture is not this "
                  "capture's (nothing was freed)";
  }

  reason reason_;
  std::size_t allocated_in_;
  std::size_t freed_in_;
  std::size_t earlier_free_;
};

} // namespace graphcap
