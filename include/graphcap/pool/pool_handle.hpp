// graphcap/pool/pool_handle.hpp - a pool that several graphs can share.
//
//   auto pool = graphcap::graph_pool_handle();
//   graphcap::graph_with<graphcap::pool::shared> first{pool}, second{first.pool()};
//
// Graphs sharing a pool draw their capture-time allocations from one set of slabs, and a later
// capture reuses the blocks an earlier one freed (or that a reset graph gave back). That is safe
// when the graphs are replayed in the order they were captured and never concurrently (the
// rule torch.cuda.graph documents for its pools): a later graph may overwrite the temporaries,
// even the outputs it was not meant to keep, of an earlier one.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/wing_contract.hpp>
#include <graphcap/pool/detail/pool_core.hpp>

#include <memory>

namespace graphcap {
namespace detail {
struct pool_handle_access;
} // namespace detail

/// A shared reference to a pool: graphs given the same handle draw from the same slabs.
class pool_handle {
public:
  /// A handle to a new, empty pool.
  pool_handle() : core_(std::make_shared<detail::pool::pool_core>()) {}

  /// What the pool holds now.
  [[nodiscard]] const pool_statistics& statistics() const noexcept { return core_->statistics(); }

  /// Whether both handles refer to the same pool.
  friend bool operator==(const pool_handle&, const pool_handle&) = default;

  /// Only a pool that can sleep sleeps (sleepable_pool_handle::sleep): refused at compile time.
  template <class... Args>
  void sleep(Args&&... /*how*/) const {
    static_assert(sizeof...(Args) > 1000, // never true: the message is the point
                  "graphcap: sleep() needs a sleepable pool: use graph_with<pool::sleepable> "
                  "(#include <graphcap/sleepable_pool.hpp>), whose pool() is a "
                  "sleepable_pool_handle");
  }
  /// Only a pool that can sleep wakes (sleepable_pool_handle::wake): refused at compile time.
  template <class... Args>
  void wake(Args&&... /*none*/) const {
    static_assert(sizeof...(Args) > 1000, // never true: the message is the point
                  "graphcap: wake() needs a sleepable pool: use graph_with<pool::sleepable> "
                  "(#include <graphcap/sleepable_pool.hpp>), whose pool() is a "
                  "sleepable_pool_handle");
  }

private:
  friend struct detail::pool_handle_access;
  explicit pool_handle(std::shared_ptr<detail::pool::pool_core> core) noexcept
      : core_(std::move(core)) {}
  std::shared_ptr<detail::pool::pool_core> core_;
};

/// The handle of a new pool, to pass to graphs that are to share it.
template <class = void>
[[nodiscard]] pool_handle graph_pool_handle() {
  return pool_handle{};
}

namespace detail {

/// For the pool policies: the core behind a handle, and a handle for a core.
struct pool_handle_access {
  /// The core behind `handle`.
  static const std::shared_ptr<detail::pool::pool_core>& core(const pool_handle& handle) noexcept {
    return handle.core_;
  }
  /// A handle for `core`.
  static pool_handle make(std::shared_ptr<detail::pool::pool_core> core) noexcept {
    return pool_handle{std::move(core)};
  }
};

/// A handle to a new pool of the kind `Graph`'s pool policy draws from: its handle_type where it
/// names one (pool::sleepable: a pool that can sleep), else a plain pool. A graph made of
/// segments (a piecewise graph) draws from its segment_type's kind.
template <class Graph>
[[nodiscard]] pool_handle new_pool_handle_for() {
  if constexpr (requires { typename Graph::segment_type; }) {
    return new_pool_handle_for<typename Graph::segment_type>();
  } else if constexpr (pool_with_handle_type<typename Graph::pool_type>) {
    return typename Graph::pool_type::handle_type{};
  } else {
    return pool_handle{};
  }
}

} // namespace detail

} // namespace graphcap
