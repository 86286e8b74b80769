// graphcap/pool/allocator.hpp - library temporaries from the capture's pool.
//
// CUDA libraries allocate scratch memory of their own: Thrust's temporary buffers, CUB's temp
// storage, cuBLAS's workspace. Inside a capture that memory must not come from cudaMalloc (it
// invalidates a global-mode capture) and must keep its address for every replay. Two adaptors
// hand such libraries the graph's pool through a capture scope:
//
//   capture_allocator<Scope>  a Thrust/CUB allocator (value_type char, allocate(n) and
//                             deallocate(p, n)):  thrust::cuda::par_nosync(alloc).on(stream)
//   capture_resource<Scope>   a memory resource in CCCL's cuda::mr shapes, both of them: today's
//                             allocate(stream, bytes, align) / allocate_sync(bytes, align) and
//                             their deallocate pair, and CCCL 3.0's (what CUDA 13.0 ships)
//                             allocate(bytes, align) / allocate_async(bytes, align, stream);
//                             streams are anything graphcap::stream_ref takes (cudaStream_t,
//                             cuda::stream_ref, ...); equality, and the cuda::mr::device_accessible
//                             property when CCCL's experimental memory resources are enabled
//                             (LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE, CCCL 3.0).
//
// Both draw from the graph's Pool policy exactly as scope::allocate does (any policy that
// allocates), on the stream they are given; neither may outlive the scope they were made from.
// Deallocation never throws: a block that cannot be given back (the capture has ended, or the
// pointer is not the capture's) stays the graph's until reset(), which releases it.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/scope.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <string>

#if defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE) && __has_include(<cuda/memory_resource>)
#include <cuda/memory_resource>
#endif

namespace graphcap {

namespace detail {

/// What the adaptors need of a capture scope (basic_graph<...>::scope): its stream, and memory
/// from the graph's pool for a given stream.
template <class Scope>
concept allocating_scope = requires(Scope& cap, cudaStream_t stream, char* block, std::size_t n) {
  { cap.stream() } -> std::same_as<cudaStream_t>;
  { cap.template allocate<char>(n, stream) } -> std::same_as<char*>;
  cap.deallocate(block, stream);
};

/// Whether the scope's graph has a pool policy that allocates. A scope that does not name its
/// pool type is let through: its own allocate() then states the same requirement.
template <class Scope>
constexpr bool scope_pool_allocates() noexcept {
  if constexpr (requires { typename Scope::pool_type; }) {
    return Scope::pool_type::can_allocate;
  } else if constexpr (requires { typename Scope::graph_type::pool_type; }) {
    return Scope::graph_type::pool_type::can_allocate;
  } else {
    return true;
  }
}

/// Both adaptors' check of their scope, with its one text; true when it passes.
template <class Scope>
constexpr bool require_allocating_scope() noexcept {
  static_assert(scope_pool_allocates<Scope>(),
                "graphcap: an allocator over a capture scope (capture_allocator, "
                "capture_resource) needs a graph whose pool policy allocates: "
                "use " GRAPHCAP_ALLOCATING_POOLS);
  return true;
}

/// Gives a block back to the capture; failures leave it with the graph until reset().
template <class Scope>
void give_back_quietly(Scope& cap, char* block, cudaStream_t stream) noexcept {
  try {
    cap.deallocate(block, stream);
  } catch (const cuda_error&) {
    static_cast<void>(cudaGetLastError()); // a failed cudaFreeAsync (graph_memory_nodes)
  } catch (...) {                          // NOLINT(bugprone-empty-catch): documented above
  }
}

} // namespace detail

/// The alignment every block of a graph's pool has (CUDA's own allocation alignment).
inline constexpr std::size_t capture_block_alignment = 256;

/// A Thrust/CUB allocator of bytes from the graph's pool, for the capture `Scope` it was made
/// from (`graphcap::capture_allocator alloc{cap};`):
///
///   thrust::sort(thrust::cuda::par_nosync(alloc).on(cap.stream()), first, last);
///   void* temp = alloc.allocate(temp_bytes);   // CUB temp storage
///
/// Use thrust::cuda::par_nosync in a capture: thrust::cuda::par synchronizes the stream after
/// the algorithm, which a capturing stream refuses. Blocks are 256-byte aligned and keep their
/// address for every replay; deallocated blocks serve later allocations of the same size on the
/// same stream in the same capture.
template <detail::allocating_scope Scope>
class capture_allocator {
  static_assert(detail::require_allocating_scope<Scope>());

public:
  using value_type = char;                ///< bytes
  using pointer = char*;                  ///< a block's address
  using size_type = std::size_t;          ///< a size in bytes
  using difference_type = std::ptrdiff_t; ///< a distance in bytes

  /// Allocates for work on the capture stream.
  explicit capture_allocator(Scope& cap) noexcept : scope_(&cap), stream_(cap.stream()) {}
  /// Allocates for work on `stream`, a stream forked from the capture stream.
  capture_allocator(Scope& cap, stream_ref stream) noexcept : scope_(&cap), stream_(stream) {}

  /// `bytes` bytes from the pool. Throws state_error once the capture has ended, and
  /// out_of_memory_error if the pool cannot grow.
  [[nodiscard]] char* allocate(std::size_t bytes) {
    return scope_->template allocate<char>(bytes, stream_);
  }

  /// Gives a block back for reuse later in this capture, on this allocator's stream.
  void deallocate(char* block, std::size_t /*bytes*/) noexcept {
    detail::give_back_quietly(*scope_, block, stream_);
  }

  /// The stream the blocks are for; pass the same one to the algorithm (`.on(stream())`).
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }

  friend bool operator==(const capture_allocator&, const capture_allocator&) = default;

private:
  Scope* scope_;
  cudaStream_t stream_;
};

/// A memory resource over the graph's pool for the capture `Scope` it was made from, in the
/// shapes of CCCL's cuda::mr (`graphcap::capture_resource resource{cap};`):
///
///   void* p = resource.allocate(stream, bytes, 256);         // today's CCCL; stream:
///   resource.deallocate(stream, p, bytes, 256);              // cudaStream_t or cuda::stream_ref
///   void* q = resource.allocate_async(bytes, 256, stream);   // CCCL 3.0 (CUDA 13.0)
///   resource.deallocate_async(q, bytes, 256, stream);
///
/// allocate_sync / deallocate_sync, and CCCL 3.0's allocate(bytes, align) / deallocate(p,
/// bytes, align), use the capture stream: inside a capture no allocation is synchronous, and a
/// block is ordered by the graph like any other. With
/// LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE defined (CCCL 3.0 guards cuda::mr behind it),
/// it satisfies cuda::mr::async_resource_with<capture_resource, cuda::mr::device_accessible>
/// and converts to cuda::mr::async_resource_ref<cuda::mr::device_accessible>. Alignments up to
/// 256 bytes are supported.
template <detail::allocating_scope Scope>
class capture_resource {
  static_assert(detail::require_allocating_scope<Scope>());

public:
  /// A resource over `cap`'s pool, for the length of that capture.
  explicit capture_resource(Scope& cap) noexcept : scope_(&cap) {}

  /// `bytes` bytes for work on `stream` (the capture stream or one forked from it): today's
  /// CCCL shape of allocate_async below.
  [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                               std::size_t alignment = capture_block_alignment) {
    return allocate_async(bytes, alignment, stream);
  }
  /// Gives a block back for reuse later in this capture by work on `stream` (today's CCCL shape).
  void deallocate(stream_ref stream, void* block, std::size_t bytes,
                  std::size_t alignment = capture_block_alignment) noexcept {
    deallocate_async(block, bytes, alignment, stream);
  }
  /// `bytes` bytes for work on the capture stream (today's CCCL name of the allocate below).
  [[nodiscard]] void* allocate_sync(std::size_t bytes,
                                    std::size_t alignment = capture_block_alignment) {
    return allocate_async(bytes, alignment, scope_->stream());
  }
  /// Gives a block back for reuse later in this capture by work on the capture stream.
  void deallocate_sync(void* block, std::size_t bytes,
                       std::size_t alignment = capture_block_alignment) noexcept {
    deallocate_async(block, bytes, alignment, scope_->stream());
  }

  /// `bytes` bytes for work on the capture stream (CCCL 3.0's shape).
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = capture_block_alignment) {
    return allocate_async(bytes, alignment, scope_->stream());
  }
  /// Gives a block back for reuse later in this capture by work on the capture stream (CCCL
  /// 3.0's shape).
  void deallocate(void* block, std::size_t bytes,
                  std::size_t alignment = capture_block_alignment) noexcept {
    deallocate_async(block, bytes, alignment, scope_->stream());
  }

  /// `bytes` bytes for work on `stream` (the capture stream or one forked from it). Throws
  /// state_error once the capture has ended, error for an alignment above 256 bytes or not a
  /// power of two, and out_of_memory_error if the pool cannot grow.
  [[nodiscard]] void* allocate_async(std::size_t bytes, std::size_t alignment, stream_ref stream) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > capture_block_alignment)
        [[unlikely]] {
      throw_bad_alignment(alignment);
    }
    return scope_->template allocate<char>(bytes, stream.get());
  }
  /// Gives a block back for reuse later in this capture by work on `stream`.
  void deallocate_async(void* block, std::size_t /*bytes*/, std::size_t /*alignment*/,
                        stream_ref stream) noexcept {
    detail::give_back_quietly(*scope_, static_cast<char*>(block), stream.get());
  }

  /// Two resources are equal when they draw from the same capture.
  friend bool operator==(const capture_resource&, const capture_resource&) = default;

#if defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE) && __has_include(<cuda/memory_resource>)
  /// Pool memory is device memory.
  friend constexpr void get_property(const capture_resource& /*resource*/,
                                     ::cuda::mr::device_accessible /*property*/) noexcept {}
#endif

private:
  [[noreturn]] static void throw_bad_alignment(std::size_t alignment) {
    throw error("graphcap: capture_resource cannot align a block to " + std::to_string(alignment) +
                " bytes: pool blocks are aligned to 256 bytes; ask for a power of two up to 256");
  }

  Scope* scope_;
};

} // namespace graphcap
