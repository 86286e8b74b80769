// graphcap::rebinder of a piecewise_graph and of a graph_family, on both backends: one call
// moves an input in every segment whose nodes hold it; a family's keys are patched when they are
// next replayed through the rebinder; an input only an island reads is refused naming it; a
// refusal in one segment leaves every segment as it was; liveness::check watches the new
// address in every segment, also one that only declared it with cap.input().
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/liveness.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "rebind_kernels.cuh"

#include <cstddef>
#include <cstdint>
#include <string>
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

std::string hex(const void* address) {
  static constexpr char digits[] = "0123456789abcdef";
  auto value = reinterpret_cast<std::uintptr_t>(address);
  std::string text;
  do {
    text.insert(text.begin(), digits[value % 16]);
    value /= 16;
  } while (value != 0);
  return "0x" + text;
}

using step_graph = gc::piecewise_graph<gc::lean_graph>;
using checked_step = gc::piecewise_graph<gc::graph_with<gc::liveness::check>>;

} // namespace

TEST_CASE("piecewise rebinder: one call moves an input in every segment that holds it") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats w(n);
  const floats w2(n);
  const floats y(n);
  const floats z(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 10.0F);
  fill(w.get(), 100.0F);
  fill(w2.get(), 1000.0F);
  int islands = 0;
  step_graph step{gc::keep_graph};
  step.capture(stream, [&](auto& cap) {
    gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F, n); // segment 0: x
    cap.eager([&](cudaStream_t /*s*/) { ++islands; });
    gctest::launch_axpy(cap.stream(), z.get(), x.get(), 1.0F, n); // segment 1: x and w
    gctest::launch_axpy(cap.stream(), z.get(), w.get(), 1.0F, n);
  });
  REQUIRE(step.segment_count() == 2);
  gc::rebinder inputs{step, {x.get(), w.get()}};
  CHECK(inputs.input_count() == 2);
  CHECK(inputs.segments_holding(x.get()) == 2);
  CHECK(inputs.segments_holding(w.get()) == 1);
  CHECK(inputs.site_count(x.get()) == 2);
  CHECK(inputs.node_count() == 3);
  const auto replay_reads = [&](float in_y, float in_z) {
    fill(y.get(), 0.0F);
    fill(z.get(), 0.0F);
    step.replay(stream);
    stream.synchronize();
    CHECK(read(y.get())[n - 1] == in_y);
    CHECK(read(z.get())[n - 1] == in_z);
  };
  replay_reads(1.0F, 101.0F);
  inputs.rebind(x.get(), x2.get()); // both segments read x2 now
  replay_reads(10.0F, 110.0F);
  CHECK(inputs.is_input(x2.get()));
  CHECK(!inputs.is_input(x.get()));
  inputs.rebind({{x2.get(), x.get()}, {w.get(), w2.get()}});
  replay_reads(1.0F, 1001.0F);
  CHECK(islands == 3);
}

TEST_CASE("piecewise rebinder: an input only an island reads is refused, naming it") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats island_only(n);
  const floats y(n);
  step_graph step{gc::keep_graph};
  step.capture(stream, [&](auto& cap) {
    gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F, n);
    cap.eager([&, p = island_only.get()](cudaStream_t s) {
      gctest::launch_axpy(s, y.get(), p, 1.0F, n); // eager: in no segment
    });
  });
  CHECK_THROWS_AS((gc::rebinder{step, {x.get(), island_only.get()}}), gc::rebind_error);
  CHECK_THROWS_WITH((gc::rebinder{step, {x.get(), island_only.get()}}),
                    gctest::contains("no segment of the piecewise graph") &&
                        gctest::contains(hex(island_only.get())) &&
                        gctest::contains("replay(stream, ctx)"));
  CHECK_NOTHROW(gc::rebinder{step, {x.get()}});
}

TEST_CASE("piecewise rebinder: a segment that refuses rolls the segments before it back") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats y(n);
  const floats copy(n);
  fill(x.get(), 1.0F);
  step_graph step{gc::keep_graph};
  step.capture(stream, [&](auto& cap) {
    gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F, n); // segment 0: a kernel
    cap.eager([](cudaStream_t /*s*/) {});
    CUDA_REQUIRE(cudaMemcpyAsync(copy.get(), x.get(), n * sizeof(float), cudaMemcpyDefault,
                                 cap.stream())); // segment 1: a cudaMemcpyDefault copy
  });
  gc::rebinder inputs{step, {x.get()}};
  std::vector<float> pageable(n, 7.0F); // segment 0 takes it, segment 1 refuses it
  CHECK_THROWS_WITH(inputs.rebind(x.get(), pageable.data(), n * sizeof(float)),
                    gctest::contains("cudaMemcpyDefault"));
  CHECK(inputs.is_input(x.get()));
  fill(y.get(), 0.0F);
  step.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 1.0F); // segment 0 still reads x
  CHECK(read(copy.get())[n - 1] == 1.0F);
  const floats x2(n);
  fill(x2.get(), 3.0F);
  inputs.rebind(x.get(), x2.get());
  fill(y.get(), 0.0F);
  step.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 3.0F);
  CHECK(read(copy.get())[n - 1] == 3.0F);
}

TEST_CASE("piecewise rebinder: stale after a recapture or a new capture until rescan()") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats y(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 5.0F);
  const auto work = [&](auto& cap) {
    cap.eager([](cudaStream_t /*s*/) {});
    gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F, n);
  };
  step_graph step{gc::keep_graph};
  step.capture(stream, work);
  gc::rebinder inputs{step, {x.get()}};
  CHECK(inputs.segments_holding(x.get()) == 1); // segment 0 is empty
  step.reset();
  step.capture(stream, work); // new segment objects: the old ones are gone
  CHECK_THROWS_AS(inputs.rebind(x.get(), x2.get()), gc::state_error);
  inputs.rescan();
  inputs.rebind(x.get(), x2.get());
  fill(y.get(), 0.0F);
  step.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 5.0F);
  // A recapture updates the segments in place: stale too, and rescan() finds x2 where the
  // work captured it (the work reads `x`, which still names the first buffer).
  static_cast<void>(step.recapture(stream, work));
  CHECK_THROWS_AS(inputs.rebind(x2.get(), x.get()), gc::state_error);
  CHECK_THROWS_AS(inputs.rescan(), gc::rebind_error); // the recapture holds x, not x2
  CHECK_THROWS_AS(inputs.rebind(x2.get(), x.get()), gc::state_error); // still stale
  gc::rebinder again{step, {x.get()}};
  again.rebind(x.get(), x2.get());
  fill(y.get(), 0.0F);
  step.replay(stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 5.0F);
  CHECK(!step_graph{}.keeps_graph());
  step_graph unkept;
  unkept.capture(stream, work);
  CHECK_THROWS_WITH((gc::rebinder{unkept, {x.get()}}), gctest::contains("keep_graph"));
}

TEST_CASE("piecewise rebinder and liveness::check: every segment watches the new address") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  float* x = nullptr;
  float* x2 = nullptr;
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)));
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x2), n * sizeof(float)));
  const floats y(n);
  checked_step step{gc::keep_graph};
  step.capture(stream, [&](auto& cap) {
    gctest::launch_axpy(cap.stream(), y.get(), x, 1.0F, n); // segment 0 holds x
    cap.eager([](cudaStream_t /*s*/) {});
    cap.input(x); // segment 1 reads x through memory: no node holds it, liveness watches it
    gctest::launch_axpy(cap.stream(), y.get(), y.get(), 1.0F, n);
  });
  gc::rebinder inputs{step, {x}};
  CHECK(inputs.segments_holding(x) == 1);
  inputs.rebind(x, x2);
  CUDA_REQUIRE(cudaFree(x)); // no segment watches it any more
  step.replay(stream);
  stream.synchronize();
  CUDA_REQUIRE(cudaFree(x2));
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
}

TEST_CASE("family rebinder: the replayed key is patched, the others when next replayed") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats y(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 10.0F);
  gc::graph_family<std::size_t> family;
  const auto captured =
      family.capture_all({64, 128, 256}, stream, [&](std::size_t key, cudaStream_t s) {
        gctest::launch_axpy(s, y.get(), x.get(), 1.0F, static_cast<unsigned>(key));
      });
  REQUIRE(captured.failures.empty());
  gc::rebinder inputs{family, {x.get()}};
  CHECK(inputs.key_count() == 3);
  const auto replay_reads = [&](std::size_t request, float expected) {
    fill(y.get(), 0.0F);
    const std::size_t key = inputs.replay_at_least(request, stream);
    stream.synchronize();
    CHECK(read(y.get())[key - 1] == expected);
    return key;
  };
  CHECK(replay_reads(100, 1.0F) == 128);
  inputs.rebind(x.get(), x2.get());
  CHECK(inputs.pending(64));
  CHECK(inputs.pending(128));
  CHECK(replay_reads(100, 10.0F) == 128);
  CHECK(!inputs.pending(128));
  CHECK(inputs.pending(256)); // not replayed: still the old address, patched at its replay
  CHECK(replay_reads(200, 10.0F) == 256);
  inputs.sync_all();
  CHECK(!inputs.pending(64));
  fill(y.get(), 0.0F);
  family.find(64)->replay(stream); // synced: a replay not through the rebinder reads x2 too
  stream.synchronize();
  CHECK(read(y.get())[63] == 10.0F);
  CHECK_THROWS_AS(inputs.replay_at_least(300, stream), gc::state_error);
  CHECK_THROWS_AS(inputs.rebind(x.get(), x2.get()), gc::rebind_error); // x is not current
}

TEST_CASE("family rebinder: a key whose graph does not hold an input is refused, naming it") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats extra(n);
  const floats y(n);
  gc::graph_family<std::size_t> family;
  static_cast<void>(family.capture_all({1, 2}, stream, [&](std::size_t key, cudaStream_t s) {
    gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n);
    if (key == 2) {
      gctest::launch_axpy(s, y.get(), extra.get(), 1.0F, n);
    }
  }));
  CHECK_THROWS_WITH((gc::rebinder{family, {x.get(), extra.get()}}),
                    gctest::contains("key 1") && gctest::contains(hex(extra.get())));
  CHECK_NOTHROW(gc::rebinder{family, {x.get()}});
}

TEST_CASE("family rebinder: a family of piecewise graphs, every segment of the replayed key") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats y(n);
  const floats z(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 4.0F);
  using piecewise = gc::piecewise_graph<gc::shared_pool_graph>;
  gc::graph_family<std::size_t, piecewise> family;
  static_cast<void>(
      family.capture_all({128, 256}, stream, [&](std::size_t key, piecewise::scope& cap) {
        const auto count = static_cast<unsigned>(key);
        gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F, count);
        cap.eager([](cudaStream_t /*s*/) {});
        gctest::launch_axpy(cap.stream(), z.get(), x.get(), 2.0F, count);
      }));
  gc::rebinder inputs{family, {x.get()}};
  inputs.rebind(x.get(), x2.get());
  fill(y.get(), 0.0F);
  fill(z.get(), 0.0F);
  CHECK(inputs.replay_at_least(200, stream) == 256);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 4.0F);
  CHECK(read(z.get())[n - 1] == 8.0F);
  CHECK(inputs.pending(128));
  gc::graph_family<std::size_t> one_executable{{.one_executable = true}};
  static_cast<void>(one_executable.capture_all({1}, stream, [&](std::size_t, cudaStream_t s) {
    gctest::launch_axpy(s, y.get(), x.get(), 1.0F, n);
  }));
  CHECK_THROWS_AS((gc::rebinder{one_executable, {x.get()}}), gc::state_error);
}

TEST_CASE("family rebinder: a family whose executables were released (a sleep) replays the "
          "rebound addresses, instantiated from the patched templates") {
  gctest::model_rebind_kernels();
  gctest::stream stream;
  const floats x(n);
  const floats x2(n);
  const floats x3(n);
  const floats y(n);
  fill(x.get(), 1.0F);
  fill(x2.get(), 4.0F);
  fill(x3.get(), 16.0F);
  using piecewise = gc::piecewise_graph<gc::shared_pool_graph>;
  gc::graph_family<std::size_t, piecewise> family;
  REQUIRE(family
              .capture_all({128, 256}, stream,
                           [&](std::size_t key, piecewise::scope& cap) {
                             cap.eager([](cudaStream_t /*s*/) {});
                             gctest::launch_axpy(cap.stream(), y.get(), x.get(), 1.0F,
                                                 static_cast<unsigned>(key));
                           })
              .complete());
  gc::rebinder inputs{family, {x.get()}};
  inputs.rebind(x.get(), x2.get());
  fill(y.get(), 0.0F);
  CHECK(inputs.replay_at_least(256, stream) == 256); // 256 patched; 128 pending
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 4.0F);
  family.release_executables();
  inputs.rebind(x2.get(), x3.get()); // while released: both keys pending
  for (const std::size_t key : {128, 256}) {
    INFO("key " << key);
    fill(y.get(), 0.0F);
    CHECK(inputs.replay_at_least(key, stream) == key);
    stream.synchronize();
    CHECK(read(y.get())[key - 1] == 16.0F);
  }
  family.release_executables();
  family.restore_executables(); // from the templates the rebinder patched
  fill(y.get(), 0.0F);
  family.replay_at_least(256, stream);
  stream.synchronize();
  CHECK(read(y.get())[n - 1] == 16.0F);
}
