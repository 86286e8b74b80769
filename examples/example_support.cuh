// examples/example_support.cuh - what every example needs besides graphcap: a device check, a
// CUDA error check for the example's own calls, the checked set-up of its streams, events and
// buffers, and the timing of its eager and replayed steps.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace example {

/// True when a CUDA device is usable; otherwise says so, so the example can stop cleanly.
inline bool device_present(const char* name) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("%s: no CUDA device present (%s); built, not run.\n", name,
                status == cudaSuccess ? "0 devices" : cudaGetErrorName(status));
    static_cast<void>(cudaGetLastError());
    return false;
  }
  return true;
}

/// Aborts the example with the CUDA error's name if `status` is not cudaSuccess.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorName(status));
    std::exit(EXIT_FAILURE);
  }
}

/// Device memory for `count` Ts (cudaMalloc, checked); the example frees it with cudaFree.
template <class T>
T* allocate(std::size_t count) {
  T* memory = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&memory), count * sizeof(T)), "cudaMalloc");
  return memory;
}

/// A non-blocking stream (checked); the example destroys it with cudaStreamDestroy.
inline cudaStream_t create_stream() {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return stream;
}

/// An event for ordering only, without timing (checked); destroyed with cudaEventDestroy.
inline cudaEvent_t create_event() {
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  return event;
}

/// Microseconds per call of `step`, over `steps` calls after one warm-up call; `wait()` drains
/// the work before the clock starts and before it stops.
template <class Step, class Wait>
double time_us(int steps, Step&& step, Wait&& wait) {
  step(); // warm-up
  wait();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    step();
  }
  wait();
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / steps;
}

/// The same, for work on one stream.
template <class Step>
double time_us(cudaStream_t stream, int steps, Step&& step) {
  return time_us(steps, step,
                 [stream] { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); });
}

} // namespace example
