// A piecewise step with liveness::check on the GPU: one check of every segment's inputs per step,
// before anything launches, an empty segment 0 (the step starts with an island) included, an
// input every segment reads too.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"

#include <cstddef>

namespace gc = graphcap;

namespace {

constexpr std::size_t n = 1024;

using checked = gc::graph_with<gc::liveness::check>;

} // namespace

TEST_CASE("piecewise liveness on the GPU: a freed input of an empty segment 0 refuses the step, "
          "no island called, no segment launched") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  float* island_input = nullptr; // only the island touches it: declared in segment 0
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&island_input), n * sizeof(float)));
  gctest::launch_fill(stream, data.get(), 0.0F, n);
  gctest::launch_fill(stream, island_input, 0.0F, n);
  int island_runs = 0;
  gc::piecewise_graph<checked> step;
  step.capture(stream, [&](auto& cap) {
    cap.input(island_input); // segment 0: no node
    cap.eager([&](cudaStream_t s) {
      ++island_runs;
      gctest::launch_add_scalar(s, island_input, 1.0F, n);
    });
    gctest::launch_add_scalar(cap.stream(), data.get(), 1.0F, n); // segment 1
  });
  REQUIRE(step.segment_count() == 2);
  REQUIRE(step.segment(0).node_count() == 0);
  step.replay(stream);
  stream.synchronize();
  REQUIRE(island_runs == 1);
  REQUIRE(gctest::sum(data.get(), n) == static_cast<double>(n));
  CUDA_REQUIRE(cudaFree(island_input));
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
  stream.synchronize();
  CHECK(island_runs == 1);                                     // the island was not called
  CHECK(gctest::sum(data.get(), n) == static_cast<double>(n)); // segment 1 did not run
}

TEST_CASE("piecewise liveness on the GPU: a freed kernel argument of the last segment refuses the "
          "step before segment 0 and the island run") {
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  float* last = nullptr;
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&last), n * sizeof(float)));
  gctest::launch_fill(stream, data.get(), 0.0F, n);
  int island_runs = 0;
  gc::piecewise_graph<checked> step;
  step.capture(stream, [&](auto& cap) {
    gctest::launch_add_scalar(cap.stream(), data.get(), 1.0F, n); // segment 0
    cap.eager([&](cudaStream_t /*s*/) { ++island_runs; });
    gctest::launch_add_scalar(cap.stream(), data.get(), 1.0F, n); // segment 1
    cap.eager([&](cudaStream_t /*s*/) { ++island_runs; });
    gctest::launch_fill(cap.stream(), last, 2.0F, n); // segment 2 reads `last`'s address
  });
  step.replay(stream);
  stream.synchronize();
  REQUIRE(gctest::sum(data.get(), n) == 2.0 * static_cast<double>(n));
  REQUIRE(island_runs == 2);
  CUDA_REQUIRE(cudaFree(last));
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 2.0 * static_cast<double>(n)); // segments 0, 1 did not run
  CHECK(island_runs == 2);
}

TEST_CASE("piecewise liveness on the GPU: freeing an input every segment reads refuses the step "
          "before anything runs") {
  // The step's check is the union of the segments' lists, each allocation once (the double counts
  // the queries); a failed union hands the check to the segments, whose own check throws.
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  float* shared = nullptr; // read by segments 0, 1 and 2, as weights are
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&shared), n * sizeof(float)));
  gctest::launch_fill(stream, data.get(), 0.0F, n);
  gctest::launch_fill(stream, shared, 1.0F, n);
  int island_runs = 0;
  gc::piecewise_graph<checked> step;
  step.capture(stream, [&](auto& cap) {
    for (int segment = 0; segment < 3; ++segment) {
      if (segment > 0) {
        cap.eager([&](cudaStream_t /*s*/) { ++island_runs; });
      }
      gctest::launch_add_scalar(cap.stream(), data.get(), 1.0F, n);
      gctest::launch_fill(cap.stream(), shared, 1.0F, n); // a kernel argument in every segment
    }
  });
  REQUIRE(step.segment_count() == 3);
  step.replay(stream);
  stream.synchronize();
  REQUIRE(gctest::sum(data.get(), n) == 3.0 * static_cast<double>(n));
  REQUIRE(island_runs == 2);
  CUDA_REQUIRE(cudaFree(shared));
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 3.0 * static_cast<double>(n)); // no segment ran
  CHECK(island_runs == 2);
}
