// Probe (kept, issue #46 goal 5): how a sleepable pool's host backup could reach pinned-copy
// speed without holding pinned memory between sleeps. Copies 1 GiB of device memory to the host
// and back, each way timed on the host to the copy's end, by:
//   pinned, kept          cudaMallocHost once, outside the timing (the ceiling: 100%)
//   pinned, fresh         cudaMallocHost + copy + cudaFreeHost (what sleep does by default)
//   pageable, touched     cudaMemcpy into malloc'd memory written once before
//   pageable, fresh       cudaMemcpy into memory malloc'd for this copy (untouched pages)
//   registered, fresh     malloc + cudaHostRegister + copy + cudaHostUnregister
//   staged xT             through two 64 MiB pinned buffers kept by the pool, copied to pageable
//                         memory by T host threads, double-buffered against the device copies
// Each line: the median GB/s of 5 runs and its share of the kept-pinned copy's.
//
//   nvcc -std=c++20 -O2 -arch=sm_90 -o backup_bandwidth backup_bandwidth.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t total = std::size_t{1} << 30;
constexpr std::size_t chunk = std::size_t{64} << 20;

double seconds(const std::function<void()>& work) {
  const auto t0 = std::chrono::steady_clock::now();
  work();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

void parallel_copy(void* to, const void* from, std::size_t bytes, int threads) {
  if (threads <= 1) {
    std::memcpy(to, from, bytes);
    return;
  }
  std::vector<std::thread> workers;
  const std::size_t part = (bytes + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(bytes, part * t);
    const std::size_t end = std::min(bytes, begin + part);
    workers.emplace_back([=] {
      std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin,
                  end - begin);
    });
  }
  for (std::thread& w : workers) {
    w.join();
  }
}

// Device -> host (`down`) or host -> device through the two staging buffers.
void staged(char* host, char* device, char* const (&staging)[2], cudaStream_t stream,
            cudaEvent_t (&done)[2], int threads, bool down) {
  const std::size_t chunks = total / chunk;
  if (down) {
    cudaMemcpyAsync(staging[0], device, chunk, cudaMemcpyDeviceToHost, stream);
    cudaEventRecord(done[0], stream);
    for (std::size_t c = 0; c < chunks; ++c) {
      if (c + 1 < chunks) {
        cudaMemcpyAsync(staging[(c + 1) % 2], device + (c + 1) * chunk, chunk,
                        cudaMemcpyDeviceToHost, stream);
        cudaEventRecord(done[(c + 1) % 2], stream);
      }
      cudaEventSynchronize(done[c % 2]);
      parallel_copy(host + c * chunk, staging[c % 2], chunk, threads);
    }
  } else {
    for (std::size_t c = 0; c < chunks; ++c) {
      if (c >= 2) {
        cudaEventSynchronize(done[c % 2]); // the staging buffer's previous copy is done
      }
      parallel_copy(staging[c % 2], host + c * chunk, chunk, threads);
      cudaMemcpyAsync(device + c * chunk, staging[c % 2], chunk, cudaMemcpyHostToDevice, stream);
      cudaEventRecord(done[c % 2], stream);
    }
    cudaStreamSynchronize(stream);
  }
}

} // namespace

int main() {
  char* device = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&device, total) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::printf("no device\n");
    return 1;
  }
  cudaMemset(device, 0x5a, total);
  char* kept = nullptr;
  cudaMallocHost(&kept, total);
  char* touched = static_cast<char*>(std::malloc(total));
  std::memset(touched, 1, total);
  char* staging[2];
  cudaMallocHost(&staging[0], chunk);
  cudaMallocHost(&staging[1], chunk);
  cudaEvent_t done[2];
  cudaEventCreateWithFlags(&done[0], cudaEventDisableTiming);
  cudaEventCreateWithFlags(&done[1], cudaEventDisableTiming);
  std::printf("1 GiB each way, %u host threads available\n", std::thread::hardware_concurrency());

  struct arm {
    const char* name;
    std::function<void(bool)> copy; // true: device -> host
  };
  const auto copy_to = [&](char* host, bool down) {
    if (down) {
      cudaMemcpyAsync(host, device, total, cudaMemcpyDeviceToHost, stream);
    } else {
      cudaMemcpyAsync(device, host, total, cudaMemcpyHostToDevice, stream);
    }
    cudaStreamSynchronize(stream);
  };
  std::vector<arm> arms = {
      {"pinned, kept", [&](bool down) { copy_to(kept, down); }},
      {"pinned, fresh",
       [&](bool down) {
         char* fresh = nullptr;
         cudaMallocHost(&fresh, total);
         copy_to(fresh, down);
         cudaFreeHost(fresh);
       }},
      {"pageable, touched", [&](bool down) { copy_to(touched, down); }},
      {"pageable, fresh",
       [&](bool down) {
         char* fresh = static_cast<char*>(std::malloc(total));
         copy_to(fresh, down);
         std::free(fresh);
       }},
      {"registered, fresh",
       [&](bool down) {
         char* fresh = static_cast<char*>(std::malloc(total));
         cudaHostRegister(fresh, total, cudaHostRegisterDefault);
         copy_to(fresh, down);
         cudaHostUnregister(fresh);
         std::free(fresh);
       }},
  };
  for (int threads : {1, 4, 8}) {
    static char names[3][32];
    char* name = names[threads == 1 ? 0 : threads == 4 ? 1 : 2];
    std::snprintf(name, 32, "staged x%d, touched", threads);
    arms.push_back({name, [&, threads](bool down) {
                      staged(touched, device, staging, stream, done, threads, down);
                    }});
  }
  arms.push_back({"staged x8, fresh", [&](bool down) {
                    char* fresh = static_cast<char*>(std::malloc(total));
                    staged(fresh, device, staging, stream, done, 8, down);
                    std::free(fresh);
                  }});

  for (const bool down : {true, false}) {
    std::printf("%s\n", down ? "device -> host (sleep's backup)" : "host -> device (wake)");
    double ceiling = 0;
    for (const arm& a : arms) {
      std::vector<double> rates;
      a.copy(down); // warm-up
      for (int run = 0; run < 5; ++run) {
        rates.push_back(static_cast<double>(total) / seconds([&] { a.copy(down); }) / 1e9);
      }
      std::sort(rates.begin(), rates.end());
      const double median = rates[rates.size() / 2];
      if (ceiling == 0) {
        ceiling = median;
      }
      std::printf("  %-22s %7.2f GB/s  %5.1f%%\n", a.name, median, 100.0 * median / ceiling);
    }
  }
  std::printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
  return 0;
}
