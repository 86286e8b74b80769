// graphcap/families/detail/byte_ladder.hpp - capture_all() under a byte_budget: which keys the
// family keeps. Keys come largest first; each is captured (its template: the pool's growth is
// then known, and its nodes), and instantiated only if its pool growth (the device bytes it
// took, pool_statistics::device_bytes) and its predicted executable bytes fit what is left. The
// prediction is its weighted nodes times the measured bytes per node (the process's, or this
// ladder's own where larger), less the slack of the driver's last 2 MiB piece (at most a piece),
// rounded up to whole pieces (families/detail/executable_memory.hpp); the charge is what was
// measured. A key that does not fit is left out (its template dropped; while no key is kept, the
// pool's slabs go back too, their stream synchronized so that an allocator's reserve goes with
// them) and the next smaller key is tried: smaller keys cost no more, so the ladder kept is the
// largest key that fits and every smaller one that still fits, the densest within about a key.
#pragma once

#include <graphcap/families/detail/executable_memory.hpp>
#include <graphcap/families/detail/family_support.hpp>
#include <graphcap/families/family_types.hpp>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace graphcap::detail::families {

/// The budget's account during one capture_all().
template <class = void>
class basic_byte_ladder {
public:
  explicit basic_byte_ladder(std::size_t budget) noexcept : budget_(budget) {}

  /// What a key of `pool_bytes` pool growth and `weight` weighted nodes is predicted to take.
  /// A key whose nodes the model puts in the room left in the driver's last piece is predicted at
  /// a piece all the same: a model that underestimates the device's bytes per node (an H100's
  /// against the H200's figure) would otherwise admit every such key with the budget spent.
  [[nodiscard]] std::size_t predict(std::size_t pool_bytes, std::size_t weight) const noexcept {
    const std::size_t model = modelled(weight);
    const std::size_t fresh = model > slack_ ? model - slack_ : 0;
    const std::size_t pieces = (fresh + executable_piece - 1) / executable_piece;
    return pool_bytes + (pieces > 0 ? pieces : 1) * executable_piece;
  }
  /// What is left of the budget.
  [[nodiscard]] std::size_t left() const noexcept {
    return spent_ < budget_ ? budget_ - spent_ : 0;
  }
  /// Whether `bytes` fit what is left.
  [[nodiscard]] bool fits(std::size_t bytes) const noexcept { return bytes <= left(); }

  /// Charges a kept key: its pool growth, and the executable bytes measured (`weight` nodes).
  void charge(std::size_t pool_bytes, std::size_t measured, std::size_t weight) noexcept {
    spent_ += pool_bytes + measured;
    const std::size_t model = modelled(weight);
    own_bytes_ += measured;
    own_weight_ += weight;
    slack_ = slack_ + measured > model ? slack_ + measured - model : 0;
    // The room left in the driver's last piece is less than a piece: where the model says more,
    // it underestimates the nodes' bytes, and a slack that kept growing would predict 0 bytes for
    // every key, each admitted with the budget spent (session 19: every key kept on an H100).
    slack_ = slack_ < executable_piece ? slack_ : executable_piece - 1;
  }
  /// Charges device bytes no key is admitted for: a left-out key's pool growth that stays with
  /// the pool, or the family's capture stream.
  void charge_pool(std::size_t pool_bytes) noexcept { spent_ += pool_bytes; }

  /// The budget.
  [[nodiscard]] std::size_t budget() const noexcept { return budget_; }

private:
  /// The bytes `weight` nodes take: the process's rate, raised to the least rate this ladder's
  /// own measures allow where they prove it too low (its nodes took at least all its pieces but
  /// the last): a device whose nodes take more than the process's figure (an H100's 3.2 KiB
  /// against the H200's 2.1 KiB) is judged by what this capture_all() measures.
  [[nodiscard]] std::size_t modelled(std::size_t weight) const noexcept {
    double rate = process_rate().per_node();
    if (own_weight_ > 0 && own_bytes_ > executable_piece) {
      const double least =
          static_cast<double>(own_bytes_ - executable_piece) / static_cast<double>(own_weight_);
      rate = least > rate ? least : rate;
    }
    return static_cast<std::size_t>(std::ceil(static_cast<double>(weight) * rate));
  }

  std::size_t budget_;
  std::size_t spent_ = 0;
  std::size_t slack_ = 0;      // of the driver's pieces measured, what the model says is unused
  std::size_t own_bytes_ = 0;  // executable bytes this ladder measured
  std::size_t own_weight_ = 0; // the weighted nodes they were for
};
using byte_ladder = basic_byte_ladder<>;

/// The sentence of a key left out.
template <class Key>
family_left_out<Key> left_out_entry(const Key& key, std::size_t bytes, std::size_t left) {
  return {key, bytes, left,
          "key " + key_text(key) + " would take " + std::to_string(bytes) +
              " bytes (pool and executable), and " + std::to_string(left) +
              " bytes of the budget were left: requests for it go to the next larger key"};
}

/// The error of a budget that not even the smallest key fits.
template <class Key>
[[noreturn]] void throw_budget_too_small(std::size_t budget, const family_left_out<Key>& smallest) {
  throw family_budget_error("graphcap: graph_family::capture_all() was given a byte_budget of " +
                            std::to_string(budget) + " bytes, less than its smallest key " +
                            key_text(smallest.key) + " takes (" + std::to_string(smallest.bytes) +
                            " bytes: its pool and its executable): raise the budget to at least "
                            "that, or pass smaller keys");
}

} // namespace graphcap::detail::families
