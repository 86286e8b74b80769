// graphcap::rebinder on the CUDA test double: the exact calls a rebind makes (one set-params per
// patched node, none for a node no input is in), and that every failure, injected in each call
// of the scan and of a rebind, leaves the executable, the template and the inputs as they were.
#include <graphcap/graphcap.hpp>
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

/// Buffers and a graph reading `x` in two kernels and one memcpy (y is written, not registered).
struct fixture {
  gctest::stream stream;
  gctest::device_buffer<float> x{n};
  gctest::device_buffer<float> x2{n};
  gctest::device_buffer<float> y{n};
  gctest::device_buffer<float> copy{n};
  gc::lean_graph graph{gc::keep_graph};

  fixture() {
    gctest::model_rebind_kernels();
    fill(x.get(), 1.0F);
    fill(x2.get(), 5.0F);
    graph.capture(stream, [&](cudaStream_t s) {
      gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n);
      gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n);
      CUDA_REQUIRE(
          cudaMemcpyAsync(copy.get(), x.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    });
    graph.instantiate();
  }

  /// y after one replay from zero: 2 * x[0] for the x the executable reads; copy = x.
  float replayed() {
    fill(y.get(), 0.0F);
    graph.replay(stream);
    stream.synchronize();
    CHECK(first(copy.get()) * 2 == first(y.get()));
    return first(y.get());
  }
};

} // namespace

TEST_CASE("rebinder on the double: one set-params per patched node, in the executable and the "
          "template") {
  cuda_double::reset();
  fixture f;
  gc::rebinder inputs{f.graph, {f.x.get()}};
  CHECK(inputs.site_count(f.x.get()) == 3);
  inputs.rebind(f.x.get(), f.x2.get()); // the first use resolves the driver functions: not counted
  inputs.rebind(f.x2.get(), f.x.get());
  cuda_double::clear_call_counts();
  inputs.rebind(f.x.get(), f.x2.get(), n * sizeof(float)); // the size given: no driver query
  CHECK(cuda_double::call_counts() == call_map{{"cuGraphExecKernelNodeSetParams", 2},
                                               {"cuGraphKernelNodeSetParams", 2},
                                               {"cudaGraphExecMemcpyNodeSetParams", 1},
                                               {"cudaGraphMemcpyNodeSetParams", 1}});
  CHECK(f.replayed() == 10.0F);

  gc::rebinder deferred{f.graph, {f.x2.get()}, gc::template_patch::deferred};
  cuda_double::clear_call_counts();
  deferred.rebind(f.x2.get(), f.x.get()); // the size asked: two attribute queries
  CHECK(cuda_double::call_counts() == call_map{{"cuGraphExecKernelNodeSetParams", 2},
                                               {"cudaGraphExecMemcpyNodeSetParams", 1},
                                               {"cuPointerGetAttribute", 2}});
  cuda_double::clear_call_counts();
  deferred.sync_template();
  CHECK(cuda_double::call_counts() ==
        call_map{{"cuGraphKernelNodeSetParams", 2}, {"cudaGraphMemcpyNodeSetParams", 1}});
  cuda_double::clear_call_counts();
  deferred.sync_template(); // nothing left to sync
  CHECK(cuda_double::call_counts().empty());
}

TEST_CASE("rebinder on the double: every failure of a rebind leaves the graph as it was") {
  cuda_double::reset();
  fixture f;
  gc::rebinder inputs{f.graph, {f.x.get()}};
  inputs.rebind(f.x.get(), f.x2.get()); // resolves the driver functions: the sweep's calls are
  inputs.rebind(f.x2.get(), f.x.get()); // those of every later rebind
  call_map sites;
  {
    cuda_double::clear_call_counts();
    inputs.rebind(f.x.get(), f.x2.get());
    sites = cuda_double::call_counts();
    inputs.rebind(f.x2.get(), f.x.get());
  }
  const std::size_t injected = gctest::fail_each_call_once(sites, [&](const std::string&) {
    CHECK_THROWS_AS(inputs.rebind(f.x.get(), f.x2.get()), gc::error);
    static_cast<void>(cudaGetLastError());
    if (inputs.is_input(f.x.get())) {
      CHECK(f.replayed() == 2.0F); // the executable reads x everywhere, as before
    } else {
      // A template patch failed after the executable was patched: the executable reads x2, and
      // the next sync_template() finishes the template's part.
      CHECK(inputs.is_input(f.x2.get()));
      CHECK(f.replayed() == 10.0F);
      inputs.sync_template();
      inputs.rebind(f.x2.get(), f.x.get());
    }
  });
  CHECK(injected == 8); // 2 queries, 3 executable patches, 3 template patches
}

TEST_CASE("rebinder on the double: a liveness refusal undoes the executable's patches") {
  cuda_double::reset();
  gctest::model_rebind_kernels();
  gctest::stream stream;
  gctest::device_buffer<float> x{n};
  gctest::device_buffer<float> y{n};
  fill(x.get(), 1.0F);
  fill(y.get(), 0.0F);
  gc::graph_with<gc::liveness::check> graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n); });
  gc::rebinder inputs{graph, {x.get()}};
  std::vector<float> pageable(n, 3.0F); // not CUDA memory: liveness::check cannot check it
  CHECK_THROWS_WITH(inputs.rebind(x.get(), pageable.data(), n * sizeof(float)),
                    gctest::contains("liveness::check cannot check it"));
  CHECK(inputs.is_input(x.get()));
  graph.replay(stream);
  stream.synchronize();
  CHECK(first(y.get()) == 1.0F); // read x, not the host vector
}

TEST_CASE("rebinder on the double: every failure of the scan is an error, and leaks nothing") {
  cuda_double::reset();
  fixture f;
  {
    gc::rebinder warm{f.graph, {f.x.get()}}; // resolves the driver functions, as any earlier use
    warm.rebind(f.x.get(), f.x2.get());
    warm.rebind(f.x2.get(), f.x.get());
  }
  call_map sites;
  {
    cuda_double::clear_call_counts();
    const gc::rebinder inputs{f.graph, {f.x.get()}};
    sites = cuda_double::call_counts();
  }
  const std::size_t injected = gctest::fail_each_call_once(sites, [&](const std::string&) {
    CHECK_THROWS_AS((gc::rebinder{f.graph, {f.x.get()}}), gc::error);
    static_cast<void>(cudaGetLastError());
    gc::rebinder again{f.graph, {f.x.get()}};
    again.rebind(f.x.get(), f.x2.get());
    CHECK(f.replayed() == 10.0F);
    again.rebind(f.x2.get(), f.x.get());
  });
  CHECK(injected >= 8);
}

TEST_CASE("rebinder on the double: a failed rescan changes nothing, with all_inputs too") {
  // all_inputs dropped every input before the scan: one that failed left the rebinder with none.
  cuda_double::reset();
  fixture f;
  gc::rebinder inputs{f.graph, gc::all_inputs};
  const std::size_t registered = inputs.input_count();
  REQUIRE(inputs.is_input(f.x.get()));
  static_cast<void>(f.graph.recapture(f.stream, [&](cudaStream_t s) {
    gctest::launch_axpy(s, f.y.get(), f.x.get(), 1.0F, n);
    gctest::launch_axpy(s, f.y.get(), f.x.get(), 1.0F, n);
    CUDA_REQUIRE(
        cudaMemcpyAsync(f.copy.get(), f.x.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s));
  }));
  cuda_double::fail_call("cuFuncGetParamInfo", cudaErrorUnknown);
  CHECK_THROWS_AS(inputs.rescan(), gc::cuda_error);
  CHECK(inputs.input_count() == registered);
  CHECK(inputs.is_input(f.x.get()));
  CHECK_THROWS_AS(inputs.rebind(f.x.get(), f.x2.get()), gc::state_error); // still stale
  inputs.rescan();
  inputs.rebind(f.x.get(), f.x2.get());
  CHECK(f.replayed() == 10.0F);
}
