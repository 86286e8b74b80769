// The rebinders of a piecewise graph and of a graph_family on the CUDA test double: the calls a
// rebind makes (one set-params per patched node of the segments holding the input, none in the
// others; a family's rebind() patches nothing, its replayed key once however many moves came
// before), every failure injected into a piecewise rebind leaves every segment as it was, and a
// step's one liveness check follows a rebind.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/liveness.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "rebind_kernels.cuh"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gc = graphcap;
using call_map = std::map<std::string, std::size_t>;

namespace {

constexpr unsigned n = 64;

float first(const float* device) {
  float value = 0;
  CUDA_REQUIRE(cudaMemcpy(&value, device, sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

void fill(float* device, float value) {
  const std::vector<float> host(n, value);
  CUDA_REQUIRE(cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

/// Three segments: x read by a kernel in segment 0, by a kernel and a memcpy in segment 2;
/// segment 1 reads only y.
struct fixture {
  gctest::stream stream;
  gctest::device_buffer<float> x{n};
  gctest::device_buffer<float> x2{n};
  gctest::device_buffer<float> y{n};
  gctest::device_buffer<float> z{n};
  gctest::device_buffer<float> copy{n};
  gc::piecewise_graph<gc::lean_graph> step{gc::keep_graph};

  fixture() {
    gctest::model_rebind_kernels();
    fill(x.get(), 1.0F);
    fill(x2.get(), 10.0F);
    step.capture(stream, [&](auto& cap) {
      gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F, n);
      cap.eager([](cudaStream_t /*s*/) {});
      gctest::launch_axpy(cap.stream(), z.get(), y.get(), 0.0F, n);
      cap.eager([](cudaStream_t /*s*/) {});
      gctest::launch_axpy(cap.stream(), z.get(), x.get(), 1.0F, n);
      CUDA_REQUIRE(cudaMemcpyAsync(copy.get(), x.get(), n * sizeof(float), cudaMemcpyDeviceToDevice,
                                   cap.stream()));
    });
    step.instantiate(); // kept templates: instantiated at the first replay, or now
  }
  /// What one replay read of x in segment 0, in segment 2's kernel and in its copy; -1 where
  /// they disagree.
  float replayed() {
    fill(y.get(), 0.0F);
    fill(z.get(), 0.0F);
    step.replay(stream);
    stream.synchronize();
    const float in_y = first(y.get());
    return in_y == first(z.get()) && in_y == first(copy.get()) ? in_y : -1.0F;
  }
};

} // namespace

TEST_CASE("piecewise rebinder on the double: set-params only in the segments holding the input") {
  cuda_double::reset();
  fixture f;
  gc::rebinder inputs{f.step, {f.x.get()}};
  CHECK(inputs.segments_holding(f.x.get()) == 2);
  CHECK(f.step.segment(0).state() == gc::graph_state::instantiated);
  CHECK(f.step.segment(2).state() == gc::graph_state::instantiated);
  inputs.rebind(f.x.get(), f.x2.get()); // the first use resolves the driver functions
  inputs.rebind(f.x2.get(), f.x.get());
  cuda_double::clear_call_counts();
  inputs.rebind(f.x.get(), f.x2.get(), n * sizeof(float));
  CHECK(cuda_double::call_counts() == call_map{{"cuGraphExecKernelNodeSetParams", 2},
                                               {"cuGraphKernelNodeSetParams", 2},
                                               {"cudaGraphExecMemcpyNodeSetParams", 1},
                                               {"cudaGraphMemcpyNodeSetParams", 1}});
  CHECK(f.replayed() == 10.0F);
}

TEST_CASE("piecewise rebinder on the double: every failure of a rebind leaves every segment as "
          "it was") {
  cuda_double::reset();
  fixture f;
  gc::rebinder inputs{f.step, {f.x.get()}};
  inputs.rebind(f.x.get(), f.x2.get());
  inputs.rebind(f.x2.get(), f.x.get());
  call_map sites;
  cuda_double::clear_call_counts();
  inputs.rebind(f.x.get(), f.x2.get());
  sites = cuda_double::call_counts();
  inputs.rebind(f.x2.get(), f.x.get());
  const std::size_t injected = gctest::fail_each_call_once(sites, [&](const std::string&) {
    CHECK_THROWS_AS(inputs.rebind(f.x.get(), f.x2.get()), gc::error);
    static_cast<void>(cudaGetLastError());
    CHECK(inputs.is_input(f.x.get()));
    CHECK(f.replayed() == 1.0F); // every segment reads x, as before
  });
  CHECK(injected >= 6); // the size query, 3 executable patches, 3 template patches
  inputs.rebind(f.x.get(), f.x2.get());
  CHECK(f.replayed() == 10.0F);
}

TEST_CASE("family rebinder on the double: rebind() patches nothing, a replay its key once") {
  cuda_double::reset();
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const gctest::device_buffer<float> x(n);
  const gctest::device_buffer<float> x2(n);
  const gctest::device_buffer<float> x3(n);
  const gctest::device_buffer<float> y(n);
  fill(x3.get(), 3.0F);
  gc::graph_family<std::size_t> family;
  static_cast<void>(
      family.capture_all({8, 16, 32, 64}, stream, [&](std::size_t key, cudaStream_t s) {
        gctest::launch_axpy(s, y.get(), x.get(), 1.0F, static_cast<unsigned>(key));
      }));
  gc::rebinder inputs{family, {x.get()}};
  inputs.rebind(x.get(), x2.get());
  static_cast<void>(inputs.replay_at_least(64, stream)); // resolves the driver functions
  cuda_double::clear_call_counts();
  inputs.rebind(x2.get(), x.get(), n * sizeof(float));
  inputs.rebind(x.get(), x3.get(), n * sizeof(float)); // two moves: recorded, nothing patched
  CHECK(cuda_double::call_counts().empty());
  fill(y.get(), 0.0F);
  cuda_double::clear_call_counts();
  CHECK(inputs.replay_at_least(10, stream) == 16);
  call_map calls = cuda_double::call_counts();
  CHECK(calls["cuGraphExecKernelNodeSetParams"] == 1); // key 16 alone, once for both moves
  CHECK(calls["cuGraphKernelNodeSetParams"] == 1);
  stream.synchronize();
  CHECK(first(y.get()) == 3.0F);
  cuda_double::clear_call_counts();
  static_cast<void>(inputs.replay_at_least(10, stream)); // up to date: no patch
  calls = cuda_double::call_counts();
  CHECK(calls.count("cuGraphExecKernelNodeSetParams") == 0);
  cuda_double::clear_call_counts();
  inputs.sync_all(); // the three others
  calls = cuda_double::call_counts();
  CHECK(calls["cuGraphExecKernelNodeSetParams"] == 3);
}

TEST_CASE("piecewise rebinder with liveness::check: the step's one check follows a rebind, each "
          "allocation once") {
  cuda_double::reset();
  gctest::model_rebind_kernels();
  gctest::stream stream;
  float* x = nullptr;
  float* x2 = nullptr;
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)));
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x2), n * sizeof(float)));
  const gctest::device_buffer<float> y(n);
  const gctest::device_buffer<float> z(n);
  const gctest::device_buffer<float> copy(n);
  fill(x, 1.0F);
  fill(x2, 10.0F);
  gc::piecewise_graph<gc::graph_with<gc::liveness::check>> step{gc::keep_graph};
  step.capture(stream, [&](auto& cap) { // x read in segments 0 and 2, y in 0 and 1, z in 1 and 2
    gctest::launch_axpy(cap.stream(), y.get(), x, 1.0F, n);
    cap.eager([](cudaStream_t /*s*/) {});
    gctest::launch_axpy(cap.stream(), z.get(), y.get(), 0.0F, n);
    cap.eager([](cudaStream_t /*s*/) {});
    gctest::launch_axpy(cap.stream(), z.get(), x, 1.0F, n);
    CUDA_REQUIRE(
        cudaMemcpyAsync(copy.get(), x, n * sizeof(float), cudaMemcpyDeviceToDevice, cap.stream()));
  });
  const auto queries_per_step = [&] {
    cuda_double::clear_call_counts();
    step.replay(stream);
    stream.synchronize();
    return cuda_double::calls("cuPointerGetAttribute");
  };
  CHECK(queries_per_step() == 4); // x, y, z, copy: each once, however many segments read it
  gc::rebinder inputs{step, {x}};
  inputs.rebind(x, x2);
  CHECK(queries_per_step() == 4); // x2 in x's place
  CHECK(first(copy.get()) == 10.0F);
  CUDA_REQUIRE(cudaFree(x)); // no longer read by the step
  CHECK(queries_per_step() == 4);
  CUDA_REQUIRE(cudaFree(x2)); // read by segments 0 and 2
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
  stream.synchronize();
}
