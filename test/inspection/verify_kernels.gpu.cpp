// GPU tests of graphcap::verify with real kernels: float outputs, reductions whose rounding
// differs between runs, a pointer baked into the graph, an output the graph does not write.
#include <graphcap/graphcap.hpp>
#include <graphcap/verify.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "verify_kernels.cuh"

#include <cstddef>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t n = 1000;

/// 1, 1/2, 1/3, ...: a sum whose float rounding depends on the order of the additions.
std::vector<float> harmonic() {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = 1.0F / static_cast<float>(i + 1);
  }
  return values;
}

void upload(float* device, const std::vector<float>& host) {
  CUDA_REQUIRE(
      cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("verify on the GPU: a saxpy graph into a buffer matches its eager run bit for bit") {
  gctest::device_buffer<float> x(n);
  upload(x.get(), harmonic());
  gc::graph graph;
  gc::buffer<float> y;
  graph.capture([&](gc::graph::scope& cap) {
    y = cap.make_buffer<float>(n);
    gctest::launch_saxpy(cap.stream(), x.get(), y.data(), 2.0F, n);
  });
  const gc::verify_report report = gc::verify(
      graph, [&](cudaStream_t s) { gctest::launch_saxpy(s, x.get(), y.data(), 2.0F, n); }, y);
  INFO(report.text());
  CHECK(report.ok());
  CHECK(report[0].bit_identical());
  gctest::require_no_last_error();
}

TEST_CASE("verify on the GPU: a kernel argument baked in at capture and changed since is caught") {
  gctest::device_buffer<float> first(n);
  gctest::device_buffer<float> second(n);
  gctest::device_buffer<float> y(n);
  std::vector<float> values = harmonic();
  upload(first.get(), values);
  values[10] = 5.0F; // second differs from first at index 10 only
  upload(second.get(), values);
  const float* input = first.get();
  const auto work = [&](cudaStream_t s) { gctest::launch_saxpy(s, input, y.get(), 2.0F, n); };
  gc::lean_graph graph;
  graph.capture(work);
  input = second.get(); // the graph still reads `first`
  gc::verify_options options;
  options.rtol = 1e-6;
  const gc::verify_report report = gc::verify(graph, work, options, gc::output(y.get(), n, "y"));
  INFO(report.text());
  CHECK_FALSE(report.ok());
  CHECK(report[0].mismatches() == 1);
  CHECK(report[0].first_mismatch() == 10);
  CHECK(report[0].eager_value() == "11");
  CHECK(contains(report.text(), "'y' (float[1000]): differs at 1 of 1000 elements; first at "
                                "index 10: eager 11, replay 1.18181825"));
  CHECK_THROWS_AS(report.require(), gc::verify_error);
}

TEST_CASE("verify on the GPU: an output only the eager work writes keeps the poison") {
  gctest::device_buffer<float> x(n);
  gctest::device_buffer<float> y(n);
  gctest::device_buffer<float> z(n);
  upload(x.get(), harmonic());
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) { gctest::launch_saxpy(s, x.get(), y.get(), 2.0F, n); });
  const gc::verify_report report = gc::verify(
      graph,
      [&](cudaStream_t s) {
        gctest::launch_saxpy(s, x.get(), y.get(), 2.0F, n);
        gctest::launch_saxpy(s, x.get(), z.get(), 3.0F, n);
      },
      gc::output(y.get(), n, "y"), gc::output(z.get(), n, "z"));
  INFO(report.text());
  CHECK(report[0].ok());
  CHECK_FALSE(report[1].ok());
  CHECK(report[1].poisoned() == n);
  CHECK(report[1].replay_value() == "nan (0xffffffff)");
}

TEST_CASE("verify on the GPU: an atomic reduction passes within a tolerance") {
  gctest::device_buffer<float> x(n);
  gctest::device_buffer<float> total(1);
  upload(x.get(), harmonic());
  const auto work = [&](cudaStream_t s) { gctest::launch_atomic_sum(s, x.get(), total.get(), n); };
  gc::lean_graph graph;
  graph.capture(work);
  CHECK(graph.node_count() == 2);
  gc::verify_options options;
  options.rtol = 1e-5; // the order of the atomic additions is the hardware's
  const gc::verify_report report = gc::verify(graph, work, options, gc::output(total.get(), 1));
  INFO(report.text());
  CHECK(report.ok());
  CHECK(report[0].max_rel_diff() <= 1e-5);
}

TEST_CASE("verify on the GPU: a reduction summed in another order fails bit equality only") {
  gctest::device_buffer<float> x(n);
  gctest::device_buffer<float> total(1);
  gctest::device_buffer<int> launches(1);
  upload(x.get(), harmonic());
  CUDA_REQUIRE(cudaMemset(launches.get(), 0, sizeof(int)));
  const auto work = [&](cudaStream_t s) {
    gctest::launch_ordered_sum(s, x.get(), total.get(), launches.get(), n);
  };
  gc::lean_graph graph;
  graph.capture(work);
  // Launch 0 (eager) sums forward, launch 1 (the replay) backward.
  const gc::verify_report exact = gc::verify(graph, work, gc::output(total.get(), 1, "total"));
  INFO(exact.text());
  CHECK_FALSE(exact.ok());
  CHECK(exact[0].first_mismatch() == 0);
  CHECK(exact[0].eager_value() == "7.4854784");
  CHECK(exact[0].replay_value() == "7.48547173");
  CHECK(exact[0].max_rel_diff() > 1e-7);
  CHECK(exact[0].max_rel_diff() < 1e-6);
  CHECK(contains(exact.text(), "max abs diff"));
  gc::verify_options options;
  options.rtol = 1e-6;
  const gc::verify_report tolerant =
      gc::verify(graph, work, options, gc::output(total.get(), 1, "total"));
  INFO(tolerant.text());
  CHECK(tolerant.ok());
  CHECK_FALSE(tolerant[0].bit_identical());
  gctest::require_no_last_error();
}
