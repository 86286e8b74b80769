// graphcap::rebinder on both backends: inputs held by kernel parameters (raw, inside a struct,
// at an offset into their allocation), memcpy and memset nodes and conditional bodies read the
// new buffers after rebind() with no recapture; the template follows; every refusal leaves the
// graph as it was; liveness::check follows the moves.
#include <graphcap/control_flow.hpp>
#include <graphcap/dot.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/rebind.hpp>
#include <graphcap/verify.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "rebind_kernels.cuh"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr unsigned n = 256;

using floats = gctest::device_buffer<float>;

std::vector<float> read(const float* device, std::size_t count = n) {
  std::vector<float> host(count);
  CUDA_REQUIRE(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

void fill(float* device, float value, std::size_t count = n) {
  const std::vector<float> host(count, value);
  CUDA_REQUIRE(cudaMemcpy(device, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
}

/// The pointer parameter `index` of the one kernel node of `graph`'s template.
const void* template_pointer(cudaGraph_t graph, std::size_t index) {
  std::size_t count = 0;
  CUDA_REQUIRE(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CUDA_REQUIRE(cudaGraphGetNodes(graph, nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_REQUIRE(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams params{};
      CUDA_REQUIRE(cudaGraphKernelNodeGetParams(node, &params));
      return *static_cast<const void* const*>(params.kernelParams[index]);
    }
  }
  return nullptr;
}

using checked_graph = gc::graph_with<gc::liveness::check>;

} // namespace

TEST_CASE("rebinder: a kernel reads the rebound buffer at the next replay, without recapture") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats y(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 10.0F);
  fill(y.get(), 0.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_axpy(s, y.get(), x.get(), 2.0F, n); });
  gc::rebinder inputs{graph, {x.get()}};
  CHECK(inputs.input_count() == 1);
  CHECK(inputs.site_count(x.get()) == 1);
  CHECK(inputs.node_count() == 1);
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 2.0F);

  inputs.rebind(x.get(), x2.get());
  CHECK(inputs.is_input(x2.get()));
  CHECK_FALSE(inputs.is_input(x.get()));
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 22.0F);                      // 2 + 2 * 10
  CHECK(template_pointer(graph.raw_graph(), 1) == x2.get()); // the template follows at once
  CHECK(template_pointer(graph.raw_graph(), 0) == y.get());  // y was not registered

  inputs.rebind(x2.get(), x.get()); // back: named by its current address
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 24.0F);
}

TEST_CASE("rebinder: several inputs in one call, a pointer into an allocation keeps its offset") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(2 * n);
  const floats x2(2 * n);
  const floats y(n);
  const floats y2(n);
  fill(x.get(), 1.0F, 2 * n);
  fill(x2.get(), 0.0F, 2 * n);
  fill(x2.get() + n, 5.0F, n); // the half the graph reads, at x + n
  fill(y.get(), 0.0F);
  fill(y2.get(), 100.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream,
                [&](cudaStream_t s) { gctest::launch_axpy(s, y.get(), x.get() + n, 1.0F, n); });
  gc::rebinder inputs{graph, {x.get(), y.get()}};
  inputs.rebind({{x.get(), x2.get()}, {y.get(), y2.get()}});
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y2.get())[0] == 105.0F); // y2 += x2[n + i]
  CHECK(read(y.get())[0] == 0.0F);    // the old output is not written any more
  CHECK(template_pointer(graph.raw_graph(), 1) == x2.get() + n);
}

TEST_CASE("rebinder: a pointer inside a struct parameter is rebound") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats a(n);
  const floats b(n);
  fill(a.get(), 0.0F);
  fill(b.get(), 7.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_bump(s, {n, a.get()}); });
  gc::rebinder inputs{graph, {a.get()}};
  inputs.rebind(a.get(), b.get());
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(b.get())[n - 1] == 8.0F);
  CHECK(read(a.get())[n - 1] == 0.0F);
}

TEST_CASE("rebinder: memcpy and memset nodes are rebound") {
  gctest::stream stream;
  const gctest::device_buffer<unsigned char> source(64);
  const gctest::device_buffer<unsigned char> source2(64);
  const gctest::device_buffer<unsigned char> target(64);
  const gctest::device_buffer<unsigned char> cleared(64);
  const gctest::device_buffer<unsigned char> cleared2(64);
  CUDA_REQUIRE(cudaMemset(source.get(), 1, 64));
  CUDA_REQUIRE(cudaMemset(source2.get(), 2, 64));
  CUDA_REQUIRE(cudaMemset(cleared.get(), 9, 64));
  CUDA_REQUIRE(cudaMemset(cleared2.get(), 9, 64));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // cudaMemset is not ordered with the test's stream
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(target.get(), source.get(), 64, cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaMemsetAsync(cleared.get(), 0, 64, s));
  });
  gc::rebinder inputs{graph, {source.get(), cleared.get()}};
  inputs.rebind({{source.get(), source2.get()}, {cleared.get(), cleared2.get()}});
  graph.replay(stream);
  stream.synchronize();
  std::vector<unsigned char> host(64);
  CUDA_REQUIRE(cudaMemcpy(host.data(), target.get(), 64, cudaMemcpyDeviceToHost));
  CHECK(host[63] == 2);
  CUDA_REQUIRE(cudaMemcpy(host.data(), cleared2.get(), 64, cudaMemcpyDeviceToHost));
  CHECK(host[63] == 0);
  CUDA_REQUIRE(cudaMemcpy(host.data(), cleared.get(), 64, cudaMemcpyDeviceToHost));
  CHECK(host[63] == 9); // the old destination is left alone
}

TEST_CASE("rebinder: a value that equals an unregistered allocation's address is never patched") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const gctest::device_buffer<std::uint64_t> out(1);
  const gctest::device_buffer<std::uint64_t> out2(1);
  const floats bystander(n);
  const auto tag = reinterpret_cast<std::uintptr_t>(bystander.get());
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_tag(s, out.get(), tag); });
  gc::rebinder inputs{graph, {out.get()}};
  CHECK(inputs.site_count(out.get()) == 1); // the tag is no site: not in a registered extent
  inputs.rebind(out.get(), out2.get());
  graph.replay(stream);
  stream.synchronize();
  std::uint64_t written = 0;
  CUDA_REQUIRE(cudaMemcpy(&written, out2.get(), sizeof written, cudaMemcpyDeviceToHost));
  CHECK(written == tag);
}

TEST_CASE("rebinder: an integer parameter is patched only inside a registered extent, not "
          "because it lies in the moved allocation") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const gctest::device_buffer<std::uint64_t> slab(64); // 512 bytes; the input is its first 256
  const gctest::device_buffer<std::uint64_t> other(64);
  const gctest::device_buffer<std::uint64_t> out(4); // not registered
  const floats bystander(n);
  CUDA_REQUIRE(cudaMemset(slab.get(), 0, 64 * sizeof(std::uint64_t)));
  CUDA_REQUIRE(cudaMemset(other.get(), 0, 64 * sizeof(std::uint64_t)));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // cudaMemset is not ordered with the test's stream
  const auto base = reinterpret_cast<std::uintptr_t>(slab.get());
  const auto unregistered = reinterpret_cast<std::uintptr_t>(bystander.get());
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_tag(s, slab.get(), 5);             // a pointer into the extent: a site
    gctest::launch_tag(s, out.get(), base + 256);     // one past the extent, same allocation
    gctest::launch_tag(s, out.get() + 1, base + 384); // deeper in the allocation, outside
    gctest::launch_tag(s, out.get() + 2, base + 16);  // an integer inside the extent: a site
    gctest::launch_tag(s, out.get() + 3, unregistered);
  });
  gc::rebinder inputs{graph, {{slab.get(), 256}}};
  // A scanner that took every word in the moved allocation for a pointer would count 4.
  CHECK(inputs.site_count(slab.get()) == 2);
  inputs.rebind(slab.get(), other.get());
  graph.replay(stream);
  stream.synchronize();
  std::vector<std::uint64_t> written(4);
  CUDA_REQUIRE(
      cudaMemcpy(written.data(), out.get(), 4 * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  const auto moved_to = reinterpret_cast<std::uintptr_t>(other.get());
  CHECK(written[0] == base + 256); // outside every registered extent: never patched
  CHECK(written[1] == base + 384);
  CHECK(written[2] == moved_to + 16); // inside: moved by its offset, as docs/rebinding.md says
  CHECK(written[3] == unregistered);
  std::uint64_t first_word = 0;
  CUDA_REQUIRE(cudaMemcpy(&first_word, other.get(), sizeof first_word, cudaMemcpyDeviceToHost));
  CHECK(first_word == 5); // the pointer moved
  CUDA_REQUIRE(cudaMemcpy(&first_word, slab.get(), sizeof first_word, cudaMemcpyDeviceToHost));
  CHECK(first_word == 0);
}

TEST_CASE("rebinder: all_inputs registers every external allocation, never the pool's memory") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats y(n);
  fill(x.get(), 3.0F);
  fill(x2.get(), 4.0F);
  fill(y.get(), 0.0F);
  gc::graph graph{gc::keep_graph}; // a private pool: its slab is the graph's own memory
  graph.capture(stream, [&](auto& cap) {
    float* scratch = cap.template allocate<float>(n);
    CUDA_REQUIRE(cudaMemsetAsync(scratch, 0, n * sizeof(float), cap.stream()));
    gctest::launch_axpy(cap.stream(), scratch, x.get(), 1.0F, n);
    gctest::launch_axpy(cap.stream(), y.get(), scratch, 1.0F, n);
  });
  gc::rebinder inputs{graph, gc::all_inputs};
  CHECK(inputs.input_count() == 2); // x and y: not the scratch block
  CHECK(inputs.is_input(x.get()));
  CHECK(inputs.is_input(y.get()));
  inputs.rebind(x.get(), x2.get());
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[0] == 4.0F);
}

TEST_CASE("rebinder: every refusal is typed and patches nothing") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats small(n / 2);
  const floats y(n);
  const floats unused(n);
  fill(x.get(), 1.0F);
  fill(y.get(), 0.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n); });
  gc::rebinder inputs{graph, {x.get()}};
  const auto unchanged = [&] {
    CHECK(inputs.is_input(x.get()));
    CHECK(template_pointer(graph.raw_graph(), 1) == x.get());
    fill(y.get(), 0.0F);
    graph.replay(stream);
    stream.synchronize();
    CHECK(read(y.get())[0] == 1.0F);
  };
  CHECK_THROWS_AS(inputs.rebind(y.get(), unused.get()), gc::rebind_error); // not registered
  CHECK_THROWS_WITH(inputs.rebind(x.get(), small.get()),
                    gctest::contains("fewer than the 1024 the graph may read"));
  CHECK_THROWS_AS(inputs.rebind(x.get(), unused.get(), 16), gc::rebind_error);
  CHECK_THROWS_WITH(inputs.rebind({{x.get(), unused.get()}, {x.get(), unused.get()}}),
                    gctest::contains("moved twice"));
  int on_the_stack = 0;
  CHECK_THROWS_WITH(inputs.rebind(x.get(), &on_the_stack),
                    gctest::contains("not in memory CUDA allocated"));
  unchanged();

  SECTION("while a capture of the graph is open") {
    auto cap = graph.begin_recapture(stream);
    CHECK_THROWS_WITH(inputs.rebind(x.get(), unused.get()), gctest::contains("capture"));
    CHECK_THROWS_AS(inputs.rebind(x.get(), unused.get()), gc::state_error);
    gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F, n);
    cap.end();
    // Recaptured: the rebinder's nodes are gone until rescan().
    CHECK_THROWS_WITH(inputs.rebind(x.get(), unused.get()), gctest::contains("rescan()"));
    inputs.rescan();
    inputs.rebind(x.get(), unused.get());
    CHECK(template_pointer(graph.raw_graph(), 1) == unused.get());
  }
  SECTION("registrations the rebinder refuses") {
    CHECK_THROWS_WITH((gc::rebinder{graph, {unused.get()}}), gctest::contains("holds no address"));
    CHECK_THROWS_WITH((gc::rebinder{graph, {{x.get(), 64}, {x.get() + 8, 64}}}),
                      gctest::contains("overlap"));
    CHECK_THROWS_WITH((gc::rebinder{graph, {&on_the_stack}}),
                      gctest::contains("rebind_input{pointer, bytes}"));
    gc::lean_graph no_template;
    no_template.capture(stream,
                        [&](cudaStream_t s) { gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n); });
    CHECK_THROWS_AS((gc::rebinder{no_template, {x.get()}}), gc::state_error);
    gc::lean_graph empty{gc::keep_graph};
    CHECK_THROWS_WITH((gc::rebinder{empty, {x.get()}}), gctest::contains("keep_graph"));
  }
}

TEST_CASE("rebinder: a patch CUDA refuses midway is undone, and the graph reads as before") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats y(n);
  const floats copy(n);
  fill(x.get(), 1.0F);
  gc::lean_graph graph{gc::keep_graph};
  // x in a kernel, a device-to-device copy and a kernel: in creation order (or its reverse) a
  // kernel is patched before the copy, whose move to pageable memory CUDA refuses (the H200:
  // docs/results/2026-12-04-h200-session17/probes/setparams_refusals.log) while it accepts the
  // kernel's. A kernel left patched would read pageable memory, which the H200 cannot.
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n);
    CUDA_REQUIRE(
        cudaMemcpyAsync(copy.get(), x.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n);
  });
  graph.instantiate();
  gc::rebinder inputs{graph, {x.get()}};
  CHECK(inputs.site_count(x.get()) == 3);
  std::vector<float> pageable(n, 7.0F);
  CHECK_THROWS_WITH(inputs.rebind(x.get(), pageable.data(), n * sizeof(float)),
                    gctest::contains("cudaGraphExecMemcpyNodeSetParams") &&
                        gctest::contains("nothing was rebound"));
  static_cast<void>(cudaGetLastError()); // CUDA leaves the refusal pending
  CHECK(inputs.is_input(x.get()));
  CHECK(template_pointer(graph.raw_graph(), 1) == x.get());
  fill(y.get(), 0.0F);
  fill(copy.get(), 0.0F);
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 2.0F); // both kernels read x
  CHECK(read(copy.get())[n - 1] == 1.0F);
  CHECK(pageable[0] == 7.0F);

  // CUDA also refuses the copy's source moved from cudaMalloc into stream-ordered pool memory
  // (the H200: setparams_refusals-rerun.log). A kernel left patched would read 9s here.
  float* pooled = nullptr;
  CUDA_REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&pooled), n * sizeof(float), stream));
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  fill(pooled, 9.0F);
  CHECK_THROWS_WITH(inputs.rebind(x.get(), pooled, n * sizeof(float)),
                    gctest::contains("cudaGraphExecMemcpyNodeSetParams"));
  static_cast<void>(cudaGetLastError());
  CHECK(inputs.is_input(x.get()));
  CHECK(template_pointer(graph.raw_graph(), 1) == x.get());
  fill(y.get(), 0.0F);
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 2.0F);
  CUDA_REQUIRE(cudaFreeAsync(pooled, stream));
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
}

TEST_CASE("rebinder: an operand of a cudaMemcpyDefault copy is not moved out of CUDA memory") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats y(n);
  const floats copy(n);
  fill(x.get(), 1.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n);
    CUDA_REQUIRE(cudaMemcpyAsync(copy.get(), x.get(), n * sizeof(float), cudaMemcpyDefault, s));
  });
  graph.instantiate();
  gc::rebinder inputs{graph, {x.get()}};
  // The H200 accepts the copy's patch and fails the next launch with cudaErrorIllegalAddress
  // (docs/results/2026-12-04-h200-session17/probes/setparams_refusals.log): refused before.
  std::vector<float> pageable(n, 7.0F);
  CHECK_THROWS_WITH(inputs.rebind(x.get(), pageable.data(), n * sizeof(float)),
                    gctest::contains("cudaMemcpyDefault") &&
                        gctest::contains("pinned (cudaMallocHost)"));
  CHECK(inputs.is_input(x.get()));
  const auto replay_reads = [&](float expected) {
    fill(y.get(), 0.0F);
    graph.replay(stream);
    stream.synchronize();
    CHECK(read(y.get())[n - 1] == expected);
    CHECK(read(copy.get())[n - 1] == expected);
  };
  replay_reads(1.0F);
  const gctest::pinned_buffer<float> pinned(n); // CUDA memory: accepted
  for (unsigned i = 0; i < n; ++i) {
    pinned.get()[i] = 4.0F;
  }
  inputs.rebind(x.get(), pinned.get(), n * sizeof(float));
  replay_reads(4.0F);
}

TEST_CASE("rebinder: a registered size narrows the extent to a sub-allocation") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats slab(2 * n); // one allocation, two inputs carved from it
  const floats other(n);
  fill(slab.get(), 1.0F, 2 * n);
  fill(other.get(), 2.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_axpy(s, slab.get() + n, slab.get(), 1.0F, n); // reads the first half
  });
  gc::rebinder inputs{graph, {{slab.get(), n * sizeof(float)}}};
  CHECK(inputs.site_count(slab.get()) == 1); // the output, at slab + n, lies outside the extent
  inputs.rebind(slab.get(), other.get());
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(slab.get() + n)[0] == 3.0F); // 1 + 2: reads other, still writes slab + n
}

TEST_CASE("rebinder: template_patch::deferred patches the template at sync_template()") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats y(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 3.0F);
  fill(y.get(), 0.0F);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n); });
  graph.instantiate(); // before: the executable is patched, the template waits
  gc::rebinder inputs{graph, {x.get()}, gc::template_patch::deferred};
  inputs.rebind(x.get(), x2.get());
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[0] == 3.0F);
  CHECK(template_pointer(graph.raw_graph(), 1) == x.get());
  inputs.sync_template();
  CHECK(template_pointer(graph.raw_graph(), 1) == x2.get());
}

TEST_CASE("rebinder and liveness::check: the new address is checked, the old one is not") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  float* x = nullptr;
  float* x2 = nullptr;
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)));
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x2), n * sizeof(float)));
  const floats y(n);
  checked_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_axpy(s, y.get(), x, 1.0F, n); });
  gc::rebinder inputs{graph, {x}};
  inputs.rebind(x, x2);
  CUDA_REQUIRE(cudaFree(x)); // the graph no longer reads it
  graph.replay(stream);
  stream.synchronize();
  CUDA_REQUIRE(cudaFree(x2));
  CHECK_THROWS_AS(graph.replay(stream), gc::liveness_error);
}

TEST_CASE("rebinder: nodes inside conditional bodies are rebound where liveness::check saw them") {
  gctest::stream stream;
  const gctest::device_buffer<unsigned char> target(64);
  const gctest::device_buffer<unsigned char> target2(64);
  CUDA_REQUIRE(cudaMemset(target.get(), 9, 64));
  CUDA_REQUIRE(cudaMemset(target2.get(), 9, 64));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // cudaMemset is not ordered with the test's stream
  const auto capture = [&](auto& graph) {
    graph.capture(stream, [&](auto& cap) {
      const gc::condition taken = graphcap::make_condition(cap, 1);
      graphcap::if_(cap, taken, [&](cudaStream_t body) {
        CUDA_REQUIRE(cudaMemsetAsync(target.get(), 4, 64, body));
      });
    });
  };
  checked_graph graph{gc::keep_graph};
  capture(graph);
  gc::rebinder inputs{graph, {target.get()}};
  CHECK(inputs.site_count(target.get()) == 1);
  inputs.rebind(target.get(), target2.get());
  graph.replay(stream);
  stream.synchronize();
  std::vector<unsigned char> host(64);
  CUDA_REQUIRE(cudaMemcpy(host.data(), target2.get(), 64, cudaMemcpyDeviceToHost));
  CHECK(host[0] == 4);
  CUDA_REQUIRE(cudaMemcpy(host.data(), target.get(), 64, cudaMemcpyDeviceToHost));
  CHECK(host[0] == 9);

  gc::lean_graph unseen{gc::keep_graph}; // no policy recorded the bodies
  capture(unseen);
  CHECK_THROWS_WITH((gc::rebinder{unseen, {target.get()}}),
                    gctest::contains("conditional node") && gctest::contains("liveness::check"));
}

TEST_CASE("device_value: a scalar the graph reads changes between replays, in stream order") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats y(n);
  fill(y.get(), 1.0F);
  gc::device_value<float> factor{2.0F};
  gc::lean_graph graph;
  graph.capture(stream,
                [&](cudaStream_t s) { gctest::launch_scale_by(s, y.get(), factor.get(), n); });
  graph.replay(stream);
  factor.set(3.0F, stream); // after the first replay, before the second
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 6.0F);
  CHECK(factor.last_set() == 3.0F);

  gc::lean_graph other;
  auto cap = other.begin_capture(stream);
  CHECK_THROWS_AS(factor.set(4.0F, cap.stream()), gc::state_error); // not inside a capture
  cap.end();
  gc::device_value<float> moved{std::move(factor)};
  CHECK(moved.get() != nullptr);
  CHECK(factor.get() == nullptr); // NOLINT(bugprone-use-after-move): what the test checks
  CHECK_THROWS_WITH(factor.set(1.0F, stream), gctest::contains("moved from"));
}

TEST_CASE("rebinder: verify() checks a rebound graph against its work run on the new buffers") {
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats y(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 4.0F);
  fill(y.get(), 0.0F);
  gc::lean_graph graph{gc::keep_graph};
  const float* input = x.get();
  const auto work = [&](cudaStream_t s) { // y = *input: verify poisons y before the replay
    CUDA_REQUIRE(cudaMemcpyAsync(y.get(), input, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
  };
  graph.capture(stream, work);
  gc::rebinder inputs{graph, {x.get()}};
  inputs.rebind(x.get(), x2.get());
  input = x2.get(); // the eager run reads what the rebound graph reads
  gc::verify_options options;
  options.stream = stream;
  const gc::verify_report same = gc::verify(graph, work, options, gc::output(y.get(), n, "y"));
  CHECK(same.ok());
  input = x.get(); // against the old buffer, the replay differs
  const gc::verify_report differs = gc::verify(graph, work, options, gc::output(y.get(), n, "y"));
  CHECK_FALSE(differs.ok());
}

TEST_CASE("rebinder: write_dot marks the nodes that hold registered inputs, and where") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats a(n);
  const floats source(n);
  const floats target(n);
  const floats cleared(n);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_bump(s, {n, a.get()});
    CUDA_REQUIRE(cudaMemcpyAsync(target.get(), source.get(), n * sizeof(float),
                                 cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaMemsetAsync(cleared.get(), 0, n * sizeof(float), s)); // not registered
  });
  gc::rebinder inputs{graph, {a.get(), source.get()}};
  gc::dot_options options;
  options.notes = inputs.dot_notes();
  const std::string text = gc::dot_text(graph, options);
  INFO(text);
  // The struct's pointer is 8 bytes into parameter 0; the copy holds its source.
  CHECK_THAT(text, gctest::contains("rebindable: arg 0 +8 (input 0x"));
  CHECK_THAT(text, gctest::contains("rebindable: source (input 0x"));
  const auto count = [&text](const std::string& what) {
    std::size_t found = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++found;
    }
    return found;
  };
  CHECK(count("penwidth=2") == 2); // the memset holds no registered input: not outlined
  CHECK(count("rebindable") == 2); // nor noted
  CHECK(gc::dot_text(graph).find("rebindable") == std::string::npos); // without the notes
}

namespace {

void CUDART_CB no_op(void* /*data*/) {}

unsigned char first_byte(const gctest::device_buffer<unsigned char>& buffer) {
  unsigned char value = 0;
  CUDA_REQUIRE(cudaMemcpy(&value, buffer.get(), 1, cudaMemcpyDeviceToHost));
  return value;
}

} // namespace

TEST_CASE("set_enabled: tagged nodes do nothing at replays while off, and run when on again") {
  gctest::stream stream;
  const gctest::device_buffer<unsigned char> always(64);
  const gctest::device_buffer<unsigned char> optional(64);
  CUDA_REQUIRE(cudaMemset(always.get(), 9, 64));
  CUDA_REQUIRE(cudaMemset(optional.get(), 9, 64));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // cudaMemset is not ordered with the test's stream
  gc::lean_graph graph{gc::keep_graph};
  gc::node_tag tagged;
  const auto step = [&](auto& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(always.get(), 1, 64, cap.stream()));
    tagged = gc::tag_nodes(graph, cap.stream(), [&](cudaStream_t s) {
      CUDA_REQUIRE(cudaMemsetAsync(optional.get(), 2, 64, s));
    });
  };
  graph.capture(stream, step);
  CHECK(tagged.size() == 1);
  CHECK(tagged.belongs_to(graph));
  graph.instantiate();
  gc::set_enabled(graph, tagged, false);
  CHECK_FALSE(gc::is_enabled(graph, tagged));
  graph.replay(stream);
  stream.synchronize();
  CHECK(first_byte(always) == 1);
  CHECK(first_byte(optional) == 9); // off: skipped
  gc::set_enabled(graph, tagged, true);
  CHECK(gc::is_enabled(graph, tagged));
  graph.replay(stream);
  stream.synchronize();
  CHECK(first_byte(optional) == 2);

  SECTION("a recapture makes the old tag stale; a tag of the new capture works") {
    const gc::node_tag old = tagged;
    static_cast<void>(graph.recapture(stream, step));
    CHECK_THROWS_AS(gc::set_enabled(graph, old, false), gc::state_error);
    gc::set_enabled(graph, tagged, false); // the executable was updated in place: made anew
    CUDA_REQUIRE(cudaMemset(optional.get(), 9, 64));
    CUDA_REQUIRE(cudaDeviceSynchronize()); // cudaMemset is not ordered with the test's stream
    graph.replay(stream);
    stream.synchronize();
    CHECK(first_byte(optional) == 9);
  }
  SECTION("refusals change nothing") {
    gc::lean_graph other{gc::keep_graph};
    gc::node_tag host;
    other.capture(stream, [&](auto& cap) {
      host = gc::tag_nodes(other, cap.stream(), [&](cudaStream_t s) {
        CUDA_REQUIRE(cudaLaunchHostFunc(s, no_op, nullptr));
      });
    });
    other.instantiate();
    CHECK_THROWS_WITH(gc::set_enabled(other, host, false), gctest::contains("holds a host node"));
    CHECK_THROWS_AS(gc::set_enabled(other, tagged, false), gc::state_error); // another graph's
    CHECK_THROWS_AS(static_cast<void>(gc::tag_nodes(graph, stream, [](cudaStream_t) {})),
                    gc::state_error); // not capturing
    gc::lean_graph dropped;
    gc::node_tag lost;
    dropped.capture(stream, [&](auto& cap) {
      lost = gc::tag_nodes(dropped, cap.stream(), [&](cudaStream_t s) {
        CUDA_REQUIRE(cudaMemsetAsync(optional.get(), 3, 64, s));
      });
    });
    CHECK_THROWS_WITH(gc::set_enabled(dropped, lost, false), gctest::contains("keep_graph"));
  }
}
