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
#include <memory>
#include <string>
#include <utility>
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

/// The pointer parameter `index` of every kernel node of `graph`'s template, then each memcpy
/// node's source: what the template holds where the fixture's graph reads x.
std::vector<const void*> template_reads(cudaGraph_t graph, std::size_t index = 1) {
  std::size_t count = 0;
  CUDA_REQUIRE(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CUDA_REQUIRE(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::vector<const void*> kernels;
  std::vector<const void*> copies;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_REQUIRE(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams params{};
      CUDA_REQUIRE(cudaGraphKernelNodeGetParams(node, &params));
      kernels.push_back(*static_cast<const void* const*>(params.kernelParams[index]));
    } else if (type == cudaGraphNodeTypeMemcpy) {
      cudaMemcpy3DParms params{};
      CUDA_REQUIRE(cudaGraphMemcpyNodeGetParams(node, &params));
      copies.push_back(params.srcPtr.ptr);
    }
  }
  kernels.insert(kernels.end(), copies.begin(), copies.end());
  return kernels;
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

TEST_CASE("rebinder on the double: a moved rebinder patches with its own words, and the "
          "moved-from one refuses") {
  cuda_double::reset();
  fixture f;
  using binder = gc::rebinder<gc::lean_graph>;
  const std::vector<gc::rebind_input> registered{f.x.get()};
  auto original = std::make_unique<binder>(f.graph, registered);
  binder moved{std::move(*original)};
  // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from rebinder's refusal is what is tested
  CHECK_THROWS_WITH(original->rebind(f.x.get(), f.x2.get()), gctest::contains("moved from"));
  CHECK_THROWS_AS(original->rescan(), gc::state_error);
  moved.rebind(f.x.get(), f.x2.get()); // the original still exists: its storage is not read
  CHECK(f.replayed() == 10.0F);
  CHECK(template_reads(f.graph.raw_graph()) ==
        std::vector<const void*>{f.x2.get(), f.x2.get(), f.x2.get()});
  original.reset(); // gone: the moved rebinder holds every word it patches with
  moved.rebind(f.x2.get(), f.x.get());
  CHECK(f.replayed() == 2.0F);

  // Move assignment: the target drops its own input (the copy's destination) and takes x.
  auto holder = std::make_unique<binder>(std::move(moved));
  binder assigned{f.graph, {f.copy.get()}};
  assigned = std::move(*holder);
  holder.reset();
  CHECK(assigned.is_input(f.x.get()));
  CHECK_FALSE(assigned.is_input(f.copy.get()));
  assigned.rebind(f.x.get(), f.x2.get());
  CHECK(f.replayed() == 10.0F);
  CHECK(template_reads(f.graph.raw_graph()) ==
        std::vector<const void*>{f.x2.get(), f.x2.get(), f.x2.get()});
}

TEST_CASE("rebinder on the double: a null target is refused with or without a size, and nothing "
          "changes") {
  cuda_double::reset();
  fixture f;
  gc::rebinder inputs{f.graph, {f.x.get()}};
  inputs.rebind(f.x.get(), f.x2.get()); // resolves the driver functions: the checks below see
  inputs.rebind(f.x2.get(), f.x.get()); // every call the refusals would make
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(inputs.rebind(f.x.get(), nullptr, n * sizeof(float)), gc::rebind_error);
  CHECK_THROWS_WITH(inputs.rebind(f.x.get(), nullptr), gctest::contains("null address"));
  CHECK_THROWS_AS(inputs.rebind({{f.x.get(), nullptr, 1U << 20U}}), gc::rebind_error);
  CHECK(cuda_double::call_counts().empty()); // nothing patched, nothing asked
  CHECK(inputs.is_input(f.x.get()));
  CHECK(template_reads(f.graph.raw_graph()) ==
        std::vector<const void*>{f.x.get(), f.x.get(), f.x.get()});
  CHECK(f.replayed() == 2.0F); // the executable reads x everywhere

  // With liveness::check, its tracking is as before: x is still what the replay checks.
  float* x = nullptr;
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)));
  fill(x, 3.0F);
  gc::graph_with<gc::liveness::check> checked{gc::keep_graph};
  checked.capture(f.stream, [&](cudaStream_t s) { gctest::launch_axpy(s, f.y.get(), x, 1.0F, n); });
  gc::rebinder tracked{checked, {x}};
  const std::size_t tracked_inputs = checked.liveness_policy().input_count();
  CHECK_THROWS_AS(tracked.rebind(x, nullptr, n * sizeof(float)), gc::rebind_error);
  CHECK(checked.liveness_policy().input_count() == tracked_inputs);
  CHECK(template_reads(checked.raw_graph()) == std::vector<const void*>{x});
  fill(f.y.get(), 0.0F);
  checked.replay(f.stream);
  f.stream.synchronize();
  CHECK(first(f.y.get()) == 3.0F);
  CUDA_REQUIRE(cudaFree(x));
  CHECK_THROWS_AS(checked.replay(f.stream), gc::liveness_error); // x is still checked
}

TEST_CASE("rebinder on the double: set-params refuse what the H200 refuses, and the undo "
          "re-patches the nodes patched before") {
  cuda_double::reset();
  fixture f; // x in two kernels, then a device-to-device copy
  gc::rebinder inputs{f.graph, {f.x.get()}};
  inputs.rebind(f.x.get(), f.x2.get()); // resolves the driver functions
  inputs.rebind(f.x2.get(), f.x.get());
  std::vector<float> pageable(n, 7.0F);
  cuda_double::clear_call_counts();
  // The H200 refuses a device-to-device copy's source moved to pageable memory (and accepts
  // the kernels'): docs/results/2026-12-04-h200-session17/probes/setparams_refusals.log.
  CHECK_THROWS_AS(inputs.rebind(f.x.get(), pageable.data(), n * sizeof(float)), gc::cuda_error);
  call_map calls = cuda_double::call_counts();
  // Whether the error path clears CUDA's pending error (it peeks first: its own only) is not
  // what this case counts.
  calls.erase("cudaGetLastError");
  calls.erase("cudaPeekAtLastError");
  CHECK(calls ==
        call_map{{"cuGraphExecKernelNodeSetParams", 4}, {"cudaGraphExecMemcpyNodeSetParams", 1}});
  static_cast<void>(cudaGetLastError());
  CHECK(inputs.is_input(f.x.get()));
  CHECK(template_reads(f.graph.raw_graph()) ==
        std::vector<const void*>{f.x.get(), f.x.get(), f.x.get()});
  CHECK(f.replayed() == 2.0F);

  // Nor a copy's source moved from cudaMalloc into stream-ordered pool memory (the rerun's log).
  float* pooled = nullptr;
  CUDA_REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&pooled), n * sizeof(float), f.stream));
  CUDA_REQUIRE(cudaStreamSynchronize(f.stream));
  fill(pooled, 9.0F);
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(inputs.rebind(f.x.get(), pooled, n * sizeof(float)), gc::cuda_error);
  calls = cuda_double::call_counts();
  calls.erase("cudaGetLastError");
  calls.erase("cudaPeekAtLastError");
  CHECK(calls ==
        call_map{{"cuGraphExecKernelNodeSetParams", 4}, {"cudaGraphExecMemcpyNodeSetParams", 1}});
  static_cast<void>(cudaGetLastError());
  CHECK(f.replayed() == 2.0F);
  CUDA_REQUIRE(cudaFreeAsync(pooled, f.stream));
  CUDA_REQUIRE(cudaStreamSynchronize(f.stream));

  // What the H200 accepts: the copy's source and the kernels' pointer moved to pinned memory.
  gctest::pinned_buffer<float> pinned(n);
  for (unsigned i = 0; i < n; ++i) {
    pinned.get()[i] = 4.0F;
  }
  inputs.rebind(f.x.get(), pinned.get(), n * sizeof(float));
  CHECK(f.replayed() == 8.0F);
  inputs.rebind(pinned.get(), f.x.get());

  // A memset's destination: pinned memory accepted, pageable refused.
  gc::lean_graph cleared{gc::keep_graph};
  cleared.capture(f.stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(f.copy.get(), 0, n * sizeof(float), s));
  });
  cleared.instantiate();
  gc::rebinder target{cleared, {f.copy.get()}};
  CHECK_THROWS_AS(target.rebind(f.copy.get(), pageable.data(), n * sizeof(float)), gc::cuda_error);
  static_cast<void>(cudaGetLastError());
  CHECK(target.is_input(f.copy.get()));
  target.rebind(f.copy.get(), pinned.get(), n * sizeof(float));
  cleared.replay(f.stream);
  f.stream.synchronize();
  CHECK(pinned.get()[n - 1] == 0.0F);
  CHECK(pageable[n - 1] == 7.0F);
}

TEST_CASE("rebinder on the double: an operand of a cudaMemcpyDefault copy moved to pageable "
          "memory is refused before any patch") {
  cuda_double::reset();
  gctest::model_rebind_kernels();
  gctest::stream stream;
  gctest::device_buffer<float> x{n};
  gctest::device_buffer<float> copy{n};
  fill(x.get(), 1.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(copy.get(), x.get(), n * sizeof(float), cudaMemcpyDefault, s));
  });
  graph.instantiate();
  gc::rebinder inputs{graph, {x.get()}};
  std::vector<float> pageable(n, 7.0F);
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(inputs.rebind(x.get(), pageable.data(), n * sizeof(float)), gc::rebind_error);
  // One query tells that the new address is no CUDA memory; nothing is patched.
  CHECK(cuda_double::call_counts() == call_map{{"cuPointerGetAttribute", 1}});
  CHECK(template_reads(graph.raw_graph()) == std::vector<const void*>{x.get()});
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
