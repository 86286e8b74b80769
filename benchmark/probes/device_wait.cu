// benchmark/probes/device_wait.cu - what a wait for the whole device costs, and which ways wait.
// A sleepable pool's sleep() waits for every replay of its graphs with a probe slab allocated
// and freed (pool/detail/slab_memory.hpp, wait_for_device: cudaFree waits for the device, and
// cudaDeviceSynchronize would break another thread's capture on the device). bench_sleep puts
// graphcap's sleep + wake without backup at 1.6-1.8x the raw VMM cycle of one chunk on an H100
// (session 23: 1.33-1.70 against 0.80-0.93 ms/GiB); this probe asks how much of that the wait is:
//  1. each way's host time on an idle device (median of 200 calls);
//  2. whether it waited: a kernel spinning about 20 ms on a non-blocking stream, then the way,
//     timed from after the launch (waited: the time is at least the spin's);
//  3. whether it broke a global-mode capture on another thread (the way called in relaxed mode
//     while the capture is open, as graphcap calls it; then the capture's end status).
#include <cuda_runtime.h>

#include "probe_support.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

namespace {

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
__global__ void touch(int* out) {
  *out = 1;
}

double micros(probe::clock_type::time_point from) { // the waits are microseconds
  return std::chrono::duration<double, std::micro>(probe::clock_type::now() - from).count();
}

struct way {
  const char* name;
  std::function<void()> wait;
};

void probe_free(std::size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) == cudaSuccess) {
    cudaFree(p);
  }
}

} // namespace

int main() {
  if (!probe::device_present("device_wait")) {
    return 0;
  }
  cudaFree(nullptr);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const long long spin_cycles = static_cast<long long>(clock_khz) * 20; // about 20 ms
  std::printf("device_wait: %s\n", prop.name);

  void* kept = nullptr;
  cudaMalloc(&kept, std::size_t{2} << 20);
  const std::vector<way> ways = {
      {"cudaMalloc + cudaFree, 2 MiB", [] { probe_free(std::size_t{2} << 20); }},
      {"cudaMalloc + cudaFree, 64 KiB", [] { probe_free(std::size_t{64} << 10); }},
      {"cudaMalloc + cudaFree, 512 B", [] { probe_free(512); }},
      {"cudaFree of a kept 2 MiB, then cudaMalloc of the next",
       [&] {
         cudaFree(kept);
         cudaMalloc(&kept, std::size_t{2} << 20);
       }},
      {"cudaDeviceSynchronize", [] { cudaDeviceSynchronize(); }},
  };

  cudaStream_t other = nullptr;
  cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
  std::printf("%-56s %12s %14s %s\n", "way", "idle us", "after spin us", "waited");
  for (const way& w : ways) {
    std::vector<double> idle;
    for (int i = 0; i < 200; ++i) {
      const auto start = probe::clock_type::now();
      w.wait();
      idle.push_back(micros(start));
    }
    spin<<<1, 1, 0, other>>>(spin_cycles);
    const auto start = probe::clock_type::now();
    w.wait();
    const double after = micros(start);
    cudaDeviceSynchronize();
    const bool waited = after > 15000.0;
    std::printf("%-56s %12.1f %14.1f %s\n", w.name, probe::median(idle), after,
                waited ? "yes" : "no");
  }

  // 3. A global-mode capture on another thread, the way called in relaxed mode meanwhile.
  int* flag = nullptr;
  cudaMalloc(&flag, sizeof(int));
  for (const way& w : ways) {
    cudaStream_t capturing = nullptr;
    cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking);
    std::atomic<bool> ready{false};
    cudaError_t began = cudaSuccess;
    cudaError_t end = cudaSuccess;
    std::atomic<bool> called{false};
    cudaError_t way_status = cudaSuccess;
    std::thread capturer([&] {
      cudaSetDevice(0);
      began = cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal);
      ready = true;
      touch<<<1, 1, 0, capturing>>>(flag);
      while (!called.load()) {
        std::this_thread::yield();
      }
      touch<<<1, 1, 0, capturing>>>(flag);
      cudaGraph_t graph = nullptr; // a global capture ends on the thread that began it
      end = cudaStreamEndCapture(capturing, &graph);
      if (graph != nullptr) {
        cudaGraphDestroy(graph);
      }
      cudaGetLastError();
    });
    while (!ready) {
      std::this_thread::yield();
    }
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    w.wait();
    way_status = cudaGetLastError();
    cudaThreadExchangeStreamCaptureMode(&mode);
    called = true;
    capturer.join();
    cudaGetLastError();
    std::printf("  during another thread's global capture (begin %s): %-52s way: %s, capture "
                "end: %s\n",
                cudaGetErrorName(began), w.name, cudaGetErrorName(way_status),
                cudaGetErrorName(end));
    cudaStreamDestroy(capturing);
  }
  cudaFree(flag);
  cudaFree(kept);
  cudaStreamDestroy(other);
  return 0;
}
