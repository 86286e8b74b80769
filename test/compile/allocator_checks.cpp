// Compile-time checks of graphcap/allocator.hpp, built by g++ (this file) and by nvcc (a
// generated .cu that includes it), with CCCL on the include path and its experimental memory
// resources enabled (LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE, which CCCL 3.0 requires).
#include <graphcap/allocator.hpp>
#include <graphcap/graphcap.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <type_traits>

namespace {

template <class Graph>
constexpr bool adaptors_fit() {
  using scope = typename Graph::scope;
  using allocator = graphcap::capture_allocator<scope>;
  using resource = graphcap::capture_resource<scope>;
  // Thrust/CUB: an allocator of bytes.
  static_assert(std::is_same_v<typename allocator::value_type, char>);
  static_assert(std::is_same_v<decltype(std::declval<allocator&>().allocate(1)), char*>);
  static_assert(std::is_nothrow_invocable_v<decltype(&allocator::deallocate), allocator&, char*,
                                            std::size_t>);
  static_assert(std::is_nothrow_copy_constructible_v<allocator>);
  // CCCL: a stream-ordered resource of device-accessible memory, and nothing more.
  static_assert(cuda::mr::resource<resource>);
  static_assert(cuda::mr::async_resource<resource>);
  static_assert(cuda::mr::async_resource_with<resource, cuda::mr::device_accessible>);
  static_assert(!cuda::mr::resource_with<resource, cuda::mr::host_accessible>);
  static_assert(
      std::is_convertible_v<resource&, cuda::mr::async_resource_ref<cuda::mr::device_accessible>>);
  static_assert(
      std::is_convertible_v<resource&, cuda::mr::resource_ref<cuda::mr::device_accessible>>);
  // Today's CCCL shape too (a stream first; the _sync pair), whose concepts CUDA 13.0's CCCL
  // does not have yet: spelled out.
  static_assert(std::is_same_v<decltype(std::declval<resource&>().allocate(
                                   std::declval<cuda::stream_ref>(), 64, 256)),
                               void*>);
  static_assert(std::is_same_v<decltype(std::declval<resource&>().allocate_sync(64, 256)), void*>);
  static_assert(noexcept(
      std::declval<resource&>().deallocate(std::declval<cuda::stream_ref>(), nullptr, 64, 256)));
  static_assert(noexcept(std::declval<resource&>().deallocate_sync(nullptr, 64, 256)));
  // Two pointers at most: cheap to copy into a Thrust execution policy.
  static_assert(sizeof(allocator) == 2 * sizeof(void*));
  static_assert(sizeof(resource) == sizeof(void*));
  return true;
}

static_assert(adaptors_fit<graphcap::graph>());
static_assert(adaptors_fit<graphcap::graph_with<graphcap::pool::shared>>());
static_assert(adaptors_fit<graphcap::graph_with<graphcap::pool::user>>());
static_assert(adaptors_fit<graphcap::graph_with<graphcap::pool::graph_memory_nodes>>());
static_assert(adaptors_fit<
              graphcap::graph_with<graphcap::pool::private_pool, graphcap::mode::thread_local_>>());

} // namespace

int main() {
  return 0;
}
