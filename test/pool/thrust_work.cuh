// test/pool/thrust_work.cuh - Thrust and CUB work captured with its temporaries from the graph's
// pool (graphcap/allocator.hpp). Defined in thrust_work.cu; the Catch2 tests that call these
// live in thrust_capture.cpp (Catch2 never goes into a .cu file).
#pragma once

#include <graphcap/graphcap.hpp>

#include <cstddef>

namespace gctest {

/// How the Thrust algorithm is told its stream.
enum class thrust_policy {
  no_sync,       ///< thrust::cuda::par_nosync(alloc).on(stream): what a capture needs
  synchronizing, ///< thrust::cuda::par(alloc).on(stream): synchronizes the stream at the end
};

/// Issues on cap.stream(): thrust::sort of `count` ints at `keys`, in place, its temporary
/// storage from a graphcap::capture_allocator over `cap`.
void thrust_sort(graphcap::graph::scope& cap, int* keys, std::size_t count, thrust_policy policy);

/// How the CUB temp storage is obtained.
enum class cub_storage {
  allocator, ///< graphcap::capture_allocator::allocate(bytes)
  resource,  ///< graphcap::capture_resource::allocate_async(bytes, 256, stream)
};

/// Issues on cap.stream(): *sum = the sum of `count` ints at `values`, by
/// cub::DeviceReduce::Sum with its temp storage from the graph's pool. Returns the temp
/// storage's size in bytes.
std::size_t cub_sum(graphcap::graph::scope& cap, const int* values, int* sum, std::size_t count,
                    cub_storage storage);

} // namespace gctest
