// Probe (kept, issue #46 goal 5): which way of taking a sleepable pool's host backup reaches 80%
// of pinned-copy bandwidth without pinned memory held between sleeps. For 64 MiB, 256 MiB and
// 1 GiB of device memory, each strategy does a "sleep" (device -> host, everything a sleep would
// do: allocation or registration included) and a "wake" (host -> device, and the giving back of
// what the sleep took), timed on the host to the end; median GB/s of 5 cycles (3 at 1 GiB) after a
// warm-up, and its share of the pinned copy of the same bytes.
//   pinned kept        cudaMallocHost once, outside the timing (the ceiling: 100%)
//   pinned fresh       cudaMallocHost at sleep, cudaFreeHost at wake (graphcap's default before)
//   pageable kept      malloc'd once and touched, plain cudaMemcpy (holds pageable memory)
//   reg kept 4K        kept touched malloc memory, cudaHostRegister at sleep, unregister at wake
//   reg kept THP       the same on memory madvise(MADV_HUGEPAGE)'d (transparent huge pages)
//   reg fresh THP      mmap + madvise + register at sleep; unregister + munmap at wake
//   reg pipe THP       kept THP memory registered chunk by chunk (32 MiB), each chunk's copy
//                      queued as soon as it is registered (registration overlaps the copies);
//                      unregistered chunk by chunk after the wake's copies
//   ring kept xT       two kept 32 MiB pinned buffers (64 MiB held), T host threads (a kept
//                      pool) copying to or from kept THP pageable memory, double-buffered
//   reg pipe fresh     the same on THP memory mapped at each sleep, unmapped at each wake
//   ring x16 fresh host   the kept ring, 16 threads, into THP memory mapped at each sleep (the
//                      threads fault it in) and unmapped at each wake: only the ring is held
//   ring x16 lazy host    the kept ring, 16 threads, into THP memory kept but given to the
//                      kernel lazily (madvise MADV_FREE) after each wake (graphcap's default)
//   ring fresh x8      the ring allocated at each sleep and freed at each wake
// Also: cudaHostRegister + cudaHostUnregister alone (ms per GiB) on kept 4K and THP memory, and
// what the kernel says about transparent huge pages.
//
//   nvcc -std=c++20 -O2 -arch=sm_90 -o backup_strategies backup_strategies.cu
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t chunk = 32 * mib;
std::size_t total = 0; // the size of this round

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("%s failed: %s\n", what, cudaGetErrorName(status));
    std::exit(1);
  }
}

double seconds(const std::function<void()>& work) {
  const auto t0 = std::chrono::steady_clock::now();
  work();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

/// Kept host threads that each memcpy a share of a range.
class copier {
public:
  explicit copier(int threads) {
    for (int t = 0; t < threads; ++t) {
      workers_.emplace_back([this, t, threads] { run(t, threads); });
    }
  }
  copier(const copier&) = delete;
  copier& operator=(const copier&) = delete;
  ~copier() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (std::thread& w : workers_) {
      w.join();
    }
  }
  void copy(void* to, const void* from, std::size_t bytes) {
    std::unique_lock lock(mutex_);
    to_ = static_cast<char*>(to);
    from_ = static_cast<const char*>(from);
    bytes_ = bytes;
    left_ = workers_.size();
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [&] { return left_ == 0; });
  }

private:
  void run(int t, int threads) {
    unsigned long seen = 0;
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (stop_) {
        return;
      }
      const std::size_t part = (bytes_ + threads - 1) / threads;
      const std::size_t begin = std::min(bytes_, part * t);
      const std::size_t end = std::min(bytes_, begin + part);
      char* to = to_;
      const char* from = from_;
      lock.unlock();
      std::memcpy(to + begin, from + begin, end - begin);
      lock.lock();
      if (--left_ == 0) {
        done_.notify_all();
      }
    }
  }
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  unsigned long generation_ = 0;
  std::size_t left_ = 0;
  char* to_ = nullptr;
  const char* from_ = nullptr;
  std::size_t bytes_ = 0;
  bool stop_ = false;
};

char* thp_memory(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::printf("mmap failed\n");
    std::exit(1);
  }
  madvise(p, bytes, MADV_HUGEPAGE);
  return static_cast<char*>(p);
}

void staged(char* host, char* device, char* const (&ring)[2], cudaStream_t stream,
            cudaEvent_t (&done)[2], copier& threads, bool down) {
  const std::size_t chunks = (total + chunk - 1) / chunk;
  const auto size = [&](std::size_t c) { return std::min(chunk, total - c * chunk); };
  if (down) {
    cudaMemcpyAsync(ring[0], device, size(0), cudaMemcpyDeviceToHost, stream);
    cudaEventRecord(done[0], stream);
    for (std::size_t c = 0; c < chunks; ++c) {
      if (c + 1 < chunks) {
        cudaMemcpyAsync(ring[(c + 1) % 2], device + (c + 1) * chunk, size(c + 1),
                        cudaMemcpyDeviceToHost, stream);
        cudaEventRecord(done[(c + 1) % 2], stream);
      }
      cudaEventSynchronize(done[c % 2]);
      threads.copy(host + c * chunk, ring[c % 2], size(c));
    }
  } else {
    for (std::size_t c = 0; c < chunks; ++c) {
      if (c >= 2) {
        cudaEventSynchronize(done[c % 2]); // the buffer's previous copy has finished
      }
      threads.copy(ring[c % 2], host + c * chunk, size(c));
      cudaMemcpyAsync(device + c * chunk, ring[c % 2], size(c), cudaMemcpyHostToDevice, stream);
      cudaEventRecord(done[c % 2], stream);
    }
    cudaStreamSynchronize(stream);
  }
}

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line.empty() ? "(unreadable)" : line;
}

} // namespace

int main() {
  constexpr std::size_t largest = std::size_t{1} << 30;
  char* device = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&device, largest) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::printf("no device\n");
    return 1;
  }
  check(cudaMemset(device, 0x5a, largest), "cudaMemset");
  utsname name{};
  uname(&name);
  std::printf("kernel %s; THP enabled: %s; defrag: %s; %u host threads\n", name.release,
              first_line("/sys/kernel/mm/transparent_hugepage/enabled").c_str(),
              first_line("/sys/kernel/mm/transparent_hugepage/defrag").c_str(),
              std::thread::hardware_concurrency());

  char* kept = nullptr;
  check(cudaMallocHost(&kept, largest), "cudaMallocHost");
  char* touched = static_cast<char*>(std::malloc(largest));
  std::memset(touched, 1, largest);
  char* huge = thp_memory(largest);
  std::memset(huge, 1, largest);
  char* lazy = thp_memory(largest); // graphcap's default: kept, MADV_FREE after each wake
  std::memset(lazy, 1, largest);
  char* ring[2];
  check(cudaMallocHost(&ring[0], chunk), "cudaMallocHost ring");
  check(cudaMallocHost(&ring[1], chunk), "cudaMallocHost ring");
  cudaEvent_t done[2];
  cudaEventCreateWithFlags(&done[0], cudaEventDisableTiming);
  cudaEventCreateWithFlags(&done[1], cudaEventDisableTiming);
  copier eight(8);
  copier sixteen(16);

  // Registration alone.
  for (const std::size_t bytes : {64 * mib, largest}) {
    for (const bool thp : {false, true}) {
      char* memory = thp ? huge : touched;
      std::vector<double> reg, unreg;
      for (int run = 0; run < 3; ++run) {
        reg.push_back(seconds([&] {
          check(cudaHostRegister(memory, bytes, cudaHostRegisterDefault), "cudaHostRegister");
        }));
        unreg.push_back(seconds([&] { check(cudaHostUnregister(memory), "cudaHostUnregister"); }));
      }
      std::sort(reg.begin(), reg.end());
      std::sort(unreg.begin(), unreg.end());
      const double gib = static_cast<double>(bytes) / static_cast<double>(largest);
      std::printf("register %4zu MiB %s: %8.2f ms/GiB, unregister %8.2f ms/GiB\n", bytes / mib,
                  thp ? "THP" : "4K ", 1e3 * reg[1] / gib, 1e3 * unreg[1] / gib);
    }
  }

  const auto copy_to = [&](char* host, std::size_t offset, std::size_t bytes, bool down) {
    if (down) {
      cudaMemcpyAsync(host + offset, device + offset, bytes, cudaMemcpyDeviceToHost, stream);
    } else {
      cudaMemcpyAsync(device + offset, host + offset, bytes, cudaMemcpyHostToDevice, stream);
    }
  };
  const auto whole = [&](char* host, bool down) {
    copy_to(host, 0, total, down);
    check(cudaStreamSynchronize(stream), "copy");
  };
  char* fresh = nullptr; // what a "sleep" took and its "wake" gives back
  char* fresh_ring[2] = {nullptr, nullptr};

  struct arm {
    const char* name;
    std::function<void(bool)> cycle; // true: the sleep (device -> host), false: the wake
  };
  const std::vector<arm> arms = {
      {"pinned kept", [&](bool down) { whole(kept, down); }},
      {"pinned fresh",
       [&](bool down) {
         if (down) {
           check(cudaMallocHost(&fresh, total), "cudaMallocHost");
         }
         whole(fresh, down);
         if (!down) {
           cudaFreeHost(fresh);
         }
       }},
      {"pageable kept", [&](bool down) { whole(touched, down); }},
      {"reg kept 4K",
       [&](bool down) {
         if (down) {
           check(cudaHostRegister(touched, total, cudaHostRegisterDefault), "register");
         }
         whole(touched, down);
         if (!down) {
           cudaHostUnregister(touched);
         }
       }},
      {"reg kept THP",
       [&](bool down) {
         if (down) {
           check(cudaHostRegister(huge, total, cudaHostRegisterDefault), "register");
         }
         whole(huge, down);
         if (!down) {
           cudaHostUnregister(huge);
         }
       }},
      {"reg fresh THP",
       [&](bool down) {
         if (down) {
           fresh = thp_memory(total);
           check(cudaHostRegister(fresh, total, cudaHostRegisterDefault), "register");
         }
         whole(fresh, down);
         if (!down) {
           cudaHostUnregister(fresh);
           munmap(fresh, total);
         }
       }},
      {"reg pipe THP",
       [&](bool down) {
         for (std::size_t at = 0; at < total; at += chunk) {
           const std::size_t bytes = std::min(chunk, total - at);
           if (down) {
             check(cudaHostRegister(huge + at, bytes, cudaHostRegisterDefault), "register");
           }
           copy_to(huge, at, bytes, down);
         }
         check(cudaStreamSynchronize(stream), "copy");
         if (!down) {
           for (std::size_t at = 0; at < total; at += chunk) {
             cudaHostUnregister(huge + at);
           }
         }
       }},
      {"reg pipe fresh",
       [&](bool down) {
         if (down) {
           fresh = thp_memory(total);
         }
         for (std::size_t at = 0; at < total; at += chunk) {
           const std::size_t bytes = std::min(chunk, total - at);
           if (down) {
             check(cudaHostRegister(fresh + at, bytes, cudaHostRegisterDefault), "register");
           }
           copy_to(fresh, at, bytes, down);
         }
         check(cudaStreamSynchronize(stream), "copy");
         if (!down) {
           for (std::size_t at = 0; at < total; at += chunk) {
             cudaHostUnregister(fresh + at);
           }
           munmap(fresh, total);
         }
       }},
      {"ring kept x8", [&](bool down) { staged(huge, device, ring, stream, done, eight, down); }},
      {"ring kept x16",
       [&](bool down) { staged(huge, device, ring, stream, done, sixteen, down); }},
      {"ring x16 fresh host",
       [&](bool down) {
         if (down) {
           fresh = thp_memory(total); // faulted in by the copier threads
         }
         staged(fresh, device, ring, stream, done, sixteen, down);
         if (!down) {
           munmap(fresh, total);
         }
       }},
      {"ring x16 lazy host",
       [&](bool down) {
         staged(lazy, device, ring, stream, done, sixteen, down);
         if (!down) {
           madvise(lazy, total, MADV_FREE); // the pages are the kernel's until written again
         }
       }},
      {"ring fresh x8",
       [&](bool down) {
         if (down) {
           check(cudaMallocHost(&fresh_ring[0], chunk), "cudaMallocHost");
           check(cudaMallocHost(&fresh_ring[1], chunk), "cudaMallocHost");
         }
         staged(huge, device, fresh_ring, stream, done, eight, down);
         if (!down) {
           cudaFreeHost(fresh_ring[0]);
           cudaFreeHost(fresh_ring[1]);
         }
       }},
  };

  for (const std::size_t bytes : {64 * mib, 256 * mib, largest}) {
    total = bytes;
    std::printf("%zu MiB: sleep (device -> host) | wake (host -> device), GB/s and %% of pinned\n",
                bytes / mib);
    double ceiling[2] = {0, 0};
    for (const arm& a : arms) {
      std::vector<double> rate[2];
      a.cycle(true); // warm-up
      a.cycle(false);
      for (int run = 0; run < (bytes >= largest ? 3 : 5); ++run) {
        for (const bool down : {true, false}) {
          rate[down ? 0 : 1].push_back(static_cast<double>(bytes) /
                                       seconds([&] { a.cycle(down); }) / 1e9);
        }
      }
      double median[2];
      for (int way = 0; way < 2; ++way) {
        std::sort(rate[way].begin(), rate[way].end());
        median[way] = rate[way][rate[way].size() / 2];
        if (ceiling[way] == 0) {
          ceiling[way] = median[way];
        }
      }
      std::printf("  %-19s %7.2f GB/s %5.1f%% | %7.2f GB/s %5.1f%%\n", a.name, median[0],
                  100.0 * median[0] / ceiling[0], median[1], 100.0 * median[1] / ceiling[1]);
    }
  }
  std::printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
  return 0;
}
