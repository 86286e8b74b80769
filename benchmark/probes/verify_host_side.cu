// Probe: the host side of graphcap::verify() at 1 Mi and 16 Mi floats, without a GPU (a memcpy
// from a host array stands in for each copy from the device, which writes the host buffer the
// same way). Per call, median of the rounds, in us:
//   hand-written    two vectors kept by the caller, two copies, a plain == loop (bench_verify's
//                   hand-written arm);
//   fresh buffers   two buffers allocated per call, as verify() did before keep_host_copies, two
//                   copies, compare_elements<float>; with the minor page faults per call;
//   kept buffers    verify()'s copies_lease (this thread's kept buffers), two copies,
//                   compare_elements<float>;
//   compare only    compare_elements<float> on buffers already copied.
// No CUDA call: runs anywhere (scripts/probes.sh builds it with the others).
#include <graphcap/inspection/detail/verify_buffers.hpp>
#include <graphcap/inspection/detail/verify_compare.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace {

namespace inspection = graphcap::detail::inspection;
using steady = std::chrono::steady_clock;

double micros(steady::time_point start, steady::time_point stop) {
  return std::chrono::duration<double, std::micro>(stop - start).count();
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

bool compare(const std::byte* eager, const std::byte* replay, std::size_t n) {
  inspection::comparison compared;
  inspection::compare_elements<float>(eager, replay, n, inspection::compare_settings{}, compared);
  return compared.mismatches == 0;
}

} // namespace

int main() {
  for (const std::size_t n : {std::size_t{1} << 20, std::size_t{1} << 24}) {
    const std::size_t bytes = n * sizeof(float);
    const std::vector<float> device(n, 20.0F); // stands in for the output on the device
    std::vector<float> eager(n);
    std::vector<float> replayed(n);
    std::vector<double> by_hand;
    std::vector<double> fresh;
    std::vector<double> kept;
    std::vector<double> compare_only;
    long fresh_faults = 0;
    long kept_faults = 0;
    bool equal = true;
    const int rounds = n > (std::size_t{1} << 20) ? 9 : 41;
    for (int round = 0; round < rounds; ++round) {
      auto start = steady::now();
      std::memcpy(eager.data(), device.data(), bytes);
      std::memcpy(replayed.data(), device.data(), bytes);
      bool same = true;
      for (std::size_t i = 0; i < n; ++i) {
        same = same && eager[i] == replayed[i];
      }
      by_hand.push_back(micros(start, steady::now()));
      equal = equal && same;

      long faults = minor_faults();
      start = steady::now();
      {
        const auto first = std::make_unique_for_overwrite<std::byte[]>(bytes);
        const auto second = std::make_unique_for_overwrite<std::byte[]>(bytes);
        std::memcpy(first.get(), device.data(), bytes);
        std::memcpy(second.get(), device.data(), bytes);
        equal = equal && compare(first.get(), second.get(), n);
      }
      fresh.push_back(micros(start, steady::now()));
      fresh_faults += minor_faults() - faults;

      faults = minor_faults();
      start = steady::now();
      {
        inspection::copies_lease lease(true);
        inspection::host_copies& copies = lease.get();
        copies.reserve(bytes);
        std::memcpy(copies.eager(), device.data(), bytes);
        std::memcpy(copies.replay(), device.data(), bytes);
        equal = equal && compare(copies.eager(), copies.replay(), n);
      }
      kept.push_back(micros(start, steady::now()));
      kept_faults += round == 0 ? 0 : minor_faults() - faults; // the first call allocates

      start = steady::now();
      equal = equal && compare(reinterpret_cast<const std::byte*>(eager.data()),
                               reinterpret_cast<const std::byte*>(replayed.data()), n);
      compare_only.push_back(micros(start, steady::now()));
    }
    std::printf("%8zu floats: hand-written %9.0f us | fresh buffers %9.0f us (%ld minor faults a "
                "call) | kept buffers %9.0f us (%ld) | compare only %8.0f us | kept / hand %.2f, "
                "fresh / hand %.2f%s\n",
                n, median(by_hand), median(fresh), fresh_faults / rounds, median(kept),
                kept_faults / (rounds - 1), median(compare_only), median(kept) / median(by_hand),
                median(fresh) / median(by_hand),
                equal ? "" : " (A DIFFERENCE: there should be none)");
  }
  return 0;
}
