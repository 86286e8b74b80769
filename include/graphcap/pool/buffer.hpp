// graphcap/pool/buffer.hpp - memory from a graph's pool that may outlive the graph.
//
//   graphcap::buffer<float> output = cap.make_buffer<float>(n);   // during a capture
//
// cap.allocate<T>(n) returns a raw pointer that lives as long as the graph. An output you keep
// after the graph is reset or destroyed (as a tensor created inside torch.cuda.graph stays valid
// while you hold it) is a buffer: it shares ownership of its block, so the block is not reused
// and its slab is not freed while any copy of the buffer lives. The graph writes the block at
// every replay, like any other capture-time allocation.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/detail/pool_core.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <utility>

namespace graphcap {
namespace detail {
struct buffer_access;

/// A pin on one block of a pool: keeps the block (and the pool's core) alive.
template <class = void>
class basic_pool_lease {
public:
  /// Pins `block` (of size_class `bytes`) in `core`.
  basic_pool_lease(std::shared_ptr<pool::pool_core> core, void* block, std::size_t bytes)
      : core_(std::move(core)), block_(block) {
    core_->pin(block_, bytes);
    core_->add_buffer();
  }
  /// Not copyable, not movable: shared through the buffer's std::shared_ptr.
  basic_pool_lease(const basic_pool_lease&) = delete;
  basic_pool_lease& operator=(const basic_pool_lease&) = delete;
  basic_pool_lease(basic_pool_lease&&) = delete;
  basic_pool_lease& operator=(basic_pool_lease&&) = delete;
  /// Unpins the block (see pool_core::unpin).
  ~basic_pool_lease() {
    core_->remove_buffer();
    core_->unpin(block_);
  }

private:
  std::shared_ptr<pool::pool_core> core_;
  void* block_;
};
/// What to name: basic_pool_lease<> (a template only so that its bodies compile where used).
using pool_lease = basic_pool_lease<>;
} // namespace detail

/// `size()` objects of type T in device memory from a graph's pool, owned jointly by every copy
/// of the buffer and kept at the same address for every replay of the graph that allocated it.
/// Copies are cheap (a reference count). Dropping the last copy gives the block back to its pool
/// (or frees its slab when the graph is gone), ordered after the graph's last replay; work of
/// your own that still reads the buffer must be complete, as for any free.
template <class T>
class buffer {
public:
  /// The type of the elements.
  using element_type = T;

  /// An empty buffer (no memory).
  constexpr buffer() noexcept = default;

  /// The first element, in device memory (nullptr when empty).
  [[nodiscard]] T* data() const noexcept { return data_.get(); }
  /// The number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The number of bytes of the elements.
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// Whether the buffer has no elements.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// Whether the buffer holds memory.
  [[nodiscard]] explicit operator bool() const noexcept { return data_ != nullptr; }
  /// The elements, as a span of device memory (dereference it only in device code).
  [[nodiscard]] std::span<T> span() const noexcept { return {data_.get(), size_}; }
  /// How many buffers share this memory.
  [[nodiscard]] long use_count() const noexcept { return data_.use_count(); }

  /// Drops this buffer's share of the memory.
  void reset() noexcept {
    data_.reset();
    size_ = 0;
  }

private:
  friend struct detail::buffer_access;
  buffer(std::shared_ptr<T> data, std::size_t size) noexcept
      : data_(std::move(data)), size_(size) {}

  std::shared_ptr<T> data_; // points at the block; owns the lease on it
  std::size_t size_ = 0;
};

namespace detail {
/// For the pool policies: a buffer over a block of `core`.
struct buffer_access {
  /// A buffer of `count` objects at `block`, a block of size class `bytes` of `core`.
  template <class T>
  static buffer<T> make(std::shared_ptr<pool::pool_core> core, T* block, std::size_t count,
                        std::size_t bytes) {
    auto lease = std::make_shared<pool_lease>(std::move(core), block, bytes);
    return buffer<T>{std::shared_ptr<T>(std::move(lease), block), count};
  }
};
} // namespace detail
} // namespace graphcap
