// bench_verify: what graphcap::verify() costs against the same check written by hand: run the
// work eagerly, copy the output back, poison it, replay the graph, copy it back again and
// compare. The work is 20 small kernels over one float output, of 1 Ki to 16 Mi elements (#32's
// goal: verify() within 1.2x of the hand-written check at 1 Mi and 16 Mi). Host time per check,
// in us; both arms copy into pageable host memory, as verify() does, and both keep their host
// memory from one check to the next (the hand-written arm its two vectors, verify() the copies
// it keeps per thread: verify_options::keep_host_copies). Both compare the same bytes with
// memcmp, as a careful user would (#50: until session 17 the hand-written arm compared float by
// float with a short-circuit == loop, a slower check than verify()'s).
#include <graphcap/graphcap.hpp>
#include <graphcap/verify.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <cstring>
#include <vector>

namespace {

constexpr int kernels = 20;
constexpr int threads = 256;

void issue_work(cudaStream_t stream, const float* in, float* out, int n) {
  bench::check(cudaMemcpyAsync(out, in, n * sizeof(float), cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync");
  for (int k = 0; k < kernels; ++k) {
    bench::add_scalar<<<(n + threads - 1) / threads, threads, 0, stream>>>(out, 1.0F, n);
  }
}

} // namespace

int main() {
  if (!bench::device_present("bench_verify")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  bench::report report("bench_verify",
                       "host time per check (us): eager run, poison, replay, compare");
  for (const int n : {1 << 10, 1 << 16, 1 << 20, 1 << 24}) {
    const bench::device_array<float> in(n);
    const bench::device_array<float> out(n);
    bench::check(cudaMemset(in, 0, n * sizeof(float)), "cudaMemset");
    const auto work = [&](cudaStream_t s) { issue_work(s, in, out, n); };
    graphcap::lean_graph graph;
    graph.capture(capture_stream, work);
    graph.upload(stream);

    std::vector<double> by_hand;
    std::vector<double> verified;
    std::vector<float> eager(n);
    std::vector<float> replayed(n);
    bool all_equal = true;
    const auto hand_written = [&](bool record) {
      const auto t0 = bench::steady::now();
      work(stream);
      bench::check(cudaStreamSynchronize(stream), "sync");
      bench::check(
          cudaMemcpyAsync(eager.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
      bench::check(cudaStreamSynchronize(stream), "sync");
      bench::check(cudaMemsetAsync(out, 0xFF, n * sizeof(float), stream), "cudaMemsetAsync");
      graph.replay(stream);
      bench::check(
          cudaMemcpyAsync(replayed.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
      bench::check(cudaStreamSynchronize(stream), "sync");
      // As a careful user compares: the same bytes verify() compares, with memcmp.
      const bool equal = std::memcmp(eager.data(), replayed.data(), n * sizeof(float)) == 0;
      const auto t1 = bench::steady::now();
      all_equal = all_equal && equal;
      if (record) {
        by_hand.push_back(bench::micros(t0, t1));
      }
    };
    const auto with_verify = [&](bool record) {
      graphcap::verify_options options;
      options.stream = stream;
      const auto t0 = bench::steady::now();
      const graphcap::verify_report checked =
          graphcap::verify(graph, work, options,
                           graphcap::output(static_cast<float*>(out), static_cast<std::size_t>(n)));
      const auto t1 = bench::steady::now();
      all_equal = all_equal && checked.ok();
      if (record) {
        verified.push_back(bench::micros(t0, t1));
      }
    };
    // 16 Mi floats: two copies of 64 MiB to the host per check; 15 rounds keep the case short.
    bench::interleave(bench::scaled(n >= (1 << 24) ? 15 : 31), 2, {hand_written, with_verify});
    report.add("check, per call", n, "hand-written", "us", by_hand);
    report.add("check, per call", n, "graphcap::verify", "us", verified);
    if (!all_equal) {
      report.note("a check found a difference at n = " + std::to_string(n) +
                  " (there should be none)");
    }
  }
  report.finish();
  return 0;
}
