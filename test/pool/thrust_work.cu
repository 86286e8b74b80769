// test/pool/thrust_work.cu - see thrust_work.cuh.
#include "thrust_work.cuh"

#include <graphcap/allocator.hpp>

#include <cub/device/device_reduce.cuh>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include <stdexcept>
#include <string>

namespace gctest {

namespace {

void check_cub(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorName(status));
  }
}

} // namespace

void thrust_sort(graphcap::graph::scope& cap, int* keys, std::size_t count, thrust_policy policy) {
  graphcap::capture_allocator allocator{cap};
  const auto length = static_cast<std::ptrdiff_t>(count);
  if (policy == thrust_policy::no_sync) {
    thrust::sort(thrust::cuda::par_nosync(allocator).on(cap.stream()), keys, keys + length);
  } else {
    thrust::sort(thrust::cuda::par(allocator).on(cap.stream()), keys, keys + length);
  }
}

std::size_t cub_sum(graphcap::graph::scope& cap, const int* values, int* sum, std::size_t count,
                    cub_storage storage) {
  std::size_t temp_bytes = 0;
  const auto length = static_cast<int>(count);
  check_cub(cub::DeviceReduce::Sum(nullptr, temp_bytes, values, sum, length, cap.stream()),
            "cub::DeviceReduce::Sum (size query)");
  if (storage == cub_storage::allocator) {
    graphcap::capture_allocator allocator{cap};
    char* temp = allocator.allocate(temp_bytes);
    check_cub(cub::DeviceReduce::Sum(temp, temp_bytes, values, sum, length, cap.stream()),
              "cub::DeviceReduce::Sum");
    allocator.deallocate(temp, temp_bytes);
  } else {
    graphcap::capture_resource resource{cap};
    void* temp = resource.allocate_async(temp_bytes, 256, cap.stream());
    check_cub(cub::DeviceReduce::Sum(temp, temp_bytes, values, sum, length, cap.stream()),
              "cub::DeviceReduce::Sum");
    resource.deallocate_async(temp, temp_bytes, 256, cap.stream());
  }
  return temp_bytes;
}

} // namespace gctest
