// test/support/cuda_helpers.hpp - small RAII helpers for tests that issue CUDA work themselves.
#pragma once

#include "catch.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

/// REQUIRE that a CUDA call succeeded, printing the error's name if not.
#define CUDA_REQUIRE(call)                                                                         \
  do {                                                                                             \
    const cudaError_t cuda_require_status = (call);                                                \
    INFO(#call << " -> " << cudaGetErrorName(cuda_require_status));                                \
    REQUIRE(cuda_require_status == cudaSuccess);                                                   \
  } while (false)

namespace gctest {

/// A stream owned by the test (non-blocking unless asked otherwise).
class stream {
public:
  explicit stream(unsigned int flags = cudaStreamNonBlocking) {
    CUDA_REQUIRE(cudaStreamCreateWithFlags(&handle_, flags));
  }
  ~stream() { static_cast<void>(cudaStreamDestroy(handle_)); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  operator cudaStream_t() const noexcept { return handle_; } // NOLINT: a test helper
  void synchronize() const { CUDA_REQUIRE(cudaStreamSynchronize(handle_)); }

private:
  cudaStream_t handle_ = nullptr;
};

/// An event owned by the test.
class event {
public:
  explicit event(unsigned int flags = cudaEventDisableTiming) {
    CUDA_REQUIRE(cudaEventCreateWithFlags(&handle_, flags));
  }
  ~event() { static_cast<void>(cudaEventDestroy(handle_)); }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  operator cudaEvent_t() const noexcept { return handle_; } // NOLINT: a test helper

private:
  cudaEvent_t handle_ = nullptr;
};

/// Device memory for `count` objects of T, owned by the test.
template <class T>
class device_buffer {
public:
  explicit device_buffer(std::size_t count) : count_(count) {
    CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~device_buffer() { static_cast<void>(cudaFree(data_)); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  [[nodiscard]] T* get() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return count_ * sizeof(T); }

private:
  T* data_ = nullptr;
  std::size_t count_;
};

/// Pinned host memory for `count` objects of T (cudaMallocHost), owned by the test.
template <class T>
class pinned_buffer {
public:
  explicit pinned_buffer(std::size_t count) {
    CUDA_REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~pinned_buffer() { static_cast<void>(cudaFreeHost(data_)); }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  [[nodiscard]] T* get() const noexcept { return data_; }

private:
  T* data_ = nullptr;
};

/// A memset of `value` over `device` and a copy of it into `host` (at least as long), on
/// `stream`: two nodes when captured, work the test double can run too.
inline void fill_and_copy(cudaStream_t stream, const device_buffer<unsigned char>& device,
                          std::vector<unsigned char>& host, int value) {
  CUDA_REQUIRE(cudaMemsetAsync(device.get(), value, device.bytes(), stream));
  CUDA_REQUIRE(
      cudaMemcpyAsync(host.data(), device.get(), device.bytes(), cudaMemcpyDeviceToHost, stream));
}

/// Captures into `graph` a block of host.size() bytes from its pool, set to `value` and copied to
/// `host` by every replay. Returns the block.
template <class Graph>
unsigned char* capture_fill(Graph& graph, std::vector<unsigned char>& host, int value) {
  return graph.capture([&](typename Graph::scope& cap) {
    auto* block = cap.template allocate<unsigned char>(host.size());
    CUDA_REQUIRE(cudaMemsetAsync(block, value, host.size(), cap.stream()));
    CUDA_REQUIRE(
        cudaMemcpyAsync(host.data(), block, host.size(), cudaMemcpyDeviceToHost, cap.stream()));
    return block;
  });
}

/// A memory pool of pinned device memory on the current device, owned by the test (the
/// user-supplied pool of pool::user). destroy() checks that CUDA destroys it. `max_size`
/// (cudaMemPoolProps::maxSize, 0: no limit) set, the pool also keeps what is freed to it.
class memory_pool {
public:
  explicit memory_pool(std::size_t max_size = 0) {
    int device = 0;
    CUDA_REQUIRE(cudaGetDevice(&device));
    cudaMemPoolProps properties{};
    properties.allocType = cudaMemAllocationTypePinned;
    properties.location.type = cudaMemLocationTypeDevice;
    properties.location.id = device;
    properties.maxSize = max_size;
    CUDA_REQUIRE(cudaMemPoolCreate(&handle_, &properties));
    if (max_size != 0) {
      std::uint64_t keep_all = ~std::uint64_t{0};
      CUDA_REQUIRE(cudaMemPoolSetAttribute(handle_, cudaMemPoolAttrReleaseThreshold, &keep_all));
    }
  }
  ~memory_pool() {
    if (handle_ != nullptr) {
      static_cast<void>(cudaMemPoolDestroy(handle_));
    }
  }
  memory_pool(const memory_pool&) = delete;
  memory_pool& operator=(const memory_pool&) = delete;
  operator cudaMemPool_t() const noexcept { return handle_; } // NOLINT: a test helper
  void destroy() {
    CUDA_REQUIRE(cudaMemPoolDestroy(handle_));
    handle_ = nullptr;
  }

private:
  cudaMemPool_t handle_ = nullptr;
};

/// A failure of one of a test's own CUDA calls (the user's work inside or around a capture), as
/// the fault sweeps tell it apart from graphcap's errors.
struct own_call_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws own_call_failed for a test's own CUDA call that failed (and clears the last error).
inline void own(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    throw own_call_failed(std::string{what} + ": " + cudaGetErrorName(status));
  }
}

/// Whether `stream` is capturing, asked of CUDA directly (not through graphcap).
inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_REQUIRE(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

/// The runtime's last error is clear (graphcap must never leave one of its own behind).
/// Without a driver CUDA's initialization error is sticky (every call, cudaGetLastError too,
/// returns it), so on such a machine that one error is all that may be there.
inline void require_no_last_error() {
  const cudaError_t last = cudaPeekAtLastError();
  INFO("last error: " << cudaGetErrorName(last));
  if (last == cudaErrorInsufficientDriver || last == cudaErrorNoDevice) {
    int devices = 0;
    REQUIRE(cudaGetDeviceCount(&devices) == last);
    return;
  }
  REQUIRE(last == cudaSuccess);
}

} // namespace gctest
