// Piecewise graphs on the double: what a replay calls (launches per segment, none for an empty
// segment, one for a graph without island; one liveness check of the segments' inputs per step,
// an allocation several segments read asked about once)
// and what a capture leaves behind when it fails.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <map>
#include <string>

namespace gc = graphcap;

namespace {

void CUDART_CB tick(void* counter) {
  ++*static_cast<int*>(counter);
}

using call_map = std::map<std::string, std::size_t>;

using checked = gc::graph_with<gc::liveness::check>;

} // namespace

TEST_CASE("piecewise without island: a replay is one cudaGraphLaunch, as a graph's") {
  cuda_double::reset();
  gctest::stream stream;
  int ticks = 0;
  gc::piecewise_graph<gc::lean_graph> step;
  step.capture(stream, [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, tick, &ticks)); });
  cuda_double::clear_call_counts();
  step.replay(stream);
  CHECK(cuda_double::call_counts() == call_map{{"cudaGraphLaunch", 1}});
}

TEST_CASE("piecewise: one launch per non-empty segment, the islands' own calls between") {
  cuda_double::reset();
  gctest::stream stream;
  int ticks = 0;
  gc::piecewise_graph<gc::lean_graph> step;
  step.capture(stream, [&](auto& cap) {
    cap.eager([&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, tick, &ticks)); });
    CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), tick, &ticks));
    cap.eager([&](cudaStream_t /*s*/) {});
    cap.eager([&](cudaStream_t /*s*/) {});
  });
  REQUIRE(step.segment_count() == 4);
  cuda_double::clear_call_counts();
  step.replay(stream);
  CHECK(cuda_double::call_counts() ==
        call_map{{"cudaGraphLaunch", 1}, {"cudaLaunchHostFunc", 1}}); // three empty segments
  stream.synchronize();
  CHECK(ticks == 2);
}

TEST_CASE("piecewise: every CUDA call of a capture may fail once, leaving nothing behind") {
  cuda_double::reset();
  gctest::stream stream;
  int ticks = 0;
  const auto capture = [&](gc::piecewise_graph<>& step) {
    step.capture(stream, [&](auto& cap) {
      auto* block = cap.template allocate<unsigned char>(64);
      CUDA_REQUIRE(cudaMemsetAsync(block, 1, 64, cap.stream()));
      cap.eager([&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, tick, &ticks)); });
      CUDA_REQUIRE(cudaMemsetAsync(cap.template allocate<unsigned char>(64), 2, 64, cap.stream()));
    });
  };
  call_map sites;
  {
    gc::piecewise_graph<> step;
    cuda_double::clear_call_counts();
    capture(step);
    sites = cuda_double::call_counts();
  }
  sites.erase("cudaMemsetAsync"); // the test's own calls
  const std::size_t injected = gctest::fail_each_call_once(sites, [&](const std::string& function) {
    const gctest::live_objects before;
    {
      gc::piecewise_graph<> step;
      try {
        capture(step);
      } catch (const gc::error&) {
        CHECK(step.empty()); // a failed capture drops every segment
      }
      static_cast<void>(cudaGetLastError());
      CHECK_FALSE(gctest::capturing(stream));
      step.reset();
      REQUIRE_NOTHROW(capture(step)); // and the graph captures again
      REQUIRE_NOTHROW(step.replay(stream));
      stream.synchronize();
    }
    const bool destroy_failed = function.find("Destroy") != std::string::npos;
    CHECK(cuda_double::live_graphs() - before.graphs <= (destroy_failed ? 1U : 0U));
    CHECK(cuda_double::live_execs() - before.execs <= (destroy_failed ? 1U : 0U));
  });
  CHECK(injected >= 6);
}

TEST_CASE("piecewise: a segment's launch that fails stops the replay, and the next replay works") {
  cuda_double::reset();
  gctest::stream stream;
  int ticks = 0;
  int island_runs = 0;
  gc::piecewise_graph<> step;
  step.capture(stream, [&](auto& cap) {
    CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), tick, &ticks));
    cap.eager([&](cudaStream_t /*s*/) { ++island_runs; });
    CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), tick, &ticks));
    cap.eager([&](cudaStream_t /*s*/) { ++island_runs; });
  });
  cuda_double::fail_call("cudaGraphLaunch", cudaErrorUnknown, 2); // the second segment's
  CHECK_THROWS_AS(step.replay(stream), gc::cuda_error);
  stream.synchronize();
  CHECK(ticks == 1);       // the first segment ran
  CHECK(island_runs == 1); // the island after the failed segment did not
  static_cast<void>(cudaGetLastError());
  step.replay(stream);
  stream.synchronize();
  CHECK(ticks == 3);
  CHECK(island_runs == 3);
}

TEST_CASE("piecewise liveness: an island-first step with a freed input in segment 0 is refused, "
          "nothing launched, no island called") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> kept(64);
  int ticks = 0;
  int island_runs = 0;
  void* input = nullptr;
  CUDA_REQUIRE(cudaMalloc(&input, 64));
  gc::piecewise_graph<checked> step;
  step.capture(stream, [&](auto& cap) {
    cap.input(input); // segment 0: no node, only this input
    cap.eager([&](cudaStream_t /*s*/) { ++island_runs; });
    CUDA_REQUIRE(cudaMemsetAsync(kept.get(), 0, 64, cap.stream())); // segment 1
    CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), tick, &ticks));
  });
  REQUIRE(step.segment_count() == 2);
  REQUIRE(step.segment(0).node_count() == 0);
  REQUIRE(step.segment(0).liveness_policy().input_count() == 1);
  step.replay(stream);
  stream.synchronize();
  REQUIRE(island_runs == 1);
  REQUIRE(ticks == 1);
  CUDA_REQUIRE(cudaFree(input));
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
  stream.synchronize();
  CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
  CHECK(island_runs == 1); // the island was not called
  CHECK(ticks == 1);       // segment 1 was not launched
}

TEST_CASE("piecewise liveness: one replay asks about each segment's inputs once, before the "
          "first launch") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> a(64);
  gctest::device_buffer<unsigned char> b(64);
  gctest::device_buffer<unsigned char> c(64);
  gc::piecewise_graph<checked> step;
  step.capture(stream, [&](auto& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(a.get(), 0, 64, cap.stream())); // segment 0
    cap.eager([&](cudaStream_t /*s*/) {});
    CUDA_REQUIRE(cudaMemsetAsync(b.get(), 0, 64, cap.stream())); // segment 1
    cap.eager([&](cudaStream_t /*s*/) {});
    CUDA_REQUIRE(cudaMemsetAsync(c.get(), 0, 64, cap.stream())); // segment 2
  });
  REQUIRE(step.segment_count() == 3);
  std::size_t inputs = 0;
  for (std::size_t k = 0; k < step.segment_count(); ++k) {
    REQUIRE(step.segment(k).liveness_policy().input_count() == 1); // one allocation each
    inputs += step.segment(k).liveness_policy().input_count();
  }
  for (int replay = 0; replay < 2; ++replay) {
    cuda_double::clear_call_counts();
    step.replay(stream);
    CHECK(cuda_double::calls("cuPointerGetAttribute") == inputs);
    CHECK(cuda_double::call_counts() ==
          call_map{{"cuPointerGetAttribute", inputs}, {"cudaGraphLaunch", 3}});
  }
  stream.synchronize();
}

TEST_CASE("piecewise liveness: an allocation several segments read is asked about once per "
          "step, and a recapture or a new capture is seen at the next step") {
  cuda_double::reset();
  gctest::stream stream;
  void* weights = nullptr; // read by every segment
  CUDA_REQUIRE(cudaMalloc(&weights, 64));
  gctest::device_buffer<unsigned char> a(64);
  gctest::device_buffer<unsigned char> c(64);
  void* b = nullptr;
  CUDA_REQUIRE(cudaMalloc(&b, 64));
  gc::piecewise_graph<checked> step;
  const auto capture = [&](void* last) {
    return [&, last](auto& cap) {
      CUDA_REQUIRE(cudaMemsetAsync(weights, 0, 64, cap.stream())); // segment 0
      CUDA_REQUIRE(cudaMemsetAsync(a.get(), 0, 64, cap.stream()));
      cap.eager([](cudaStream_t /*s*/) {});
      CUDA_REQUIRE(cudaMemsetAsync(weights, 0, 64, cap.stream())); // segment 1
      cap.eager([](cudaStream_t /*s*/) {});
      CUDA_REQUIRE(cudaMemsetAsync(weights, 0, 64, cap.stream())); // segment 2
      CUDA_REQUIRE(cudaMemsetAsync(last, 0, 64, cap.stream()));
    };
  };
  step.capture(stream, capture(b));
  std::size_t per_segment = 0;
  for (std::size_t k = 0; k < step.segment_count(); ++k) {
    per_segment += step.segment(k).liveness_policy().input_count();
  }
  REQUIRE(per_segment == 5); // weights three times, a, b
  const auto queries_per_step = [&] {
    cuda_double::clear_call_counts();
    step.replay(stream);
    return cuda_double::calls("cuPointerGetAttribute");
  };
  CHECK(queries_per_step() == 3); // weights, a, b: each once
  CHECK(queries_per_step() == 3);
  // A recapture (the same segments, new inputs): the step's check follows it.
  CUDA_REQUIRE(cudaFree(b));
  static_cast<void>(step.recapture(stream, capture(c.get())));
  CHECK(queries_per_step() == 3); // weights, a, c: b is no longer asked about
  // A new capture (new segments), reading a in the last segment too.
  step.reset();
  step.capture(stream, capture(a.get()));
  CHECK(queries_per_step() == 2); // weights, a
  // A freed input every segment reads refuses the step before any launch.
  CUDA_REQUIRE(cudaFree(weights));
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
  stream.synchronize();
}

TEST_CASE("piecewise: a segment's end failing in a call of graphcap's own names that call") {
  // Only CUDA's stream-capture statuses (work not joined, a capture invalidated) are reported as
  // the segment's capture_error with the fork and event hints; a failed instantiation or event
  // creation at a break keeps its own error, naming its call (it was a capture_error naming
  // "piecewise capture: segment 0", with the fork hint).
  // (The event creation was the shared pool's completion marker's, gone since #48.)
  for (const char* call : {"cudaGraphInstantiateWithFlags"}) {
    INFO(call);
    cuda_double::reset();
    gctest::stream stream;
    int ticks = 0;
    gc::piecewise_graph<> step;
    cuda_double::fail_call(call, cudaErrorUnknown);
    try {
      step.capture(stream, [&](auto& cap) {
        CUDA_REQUIRE(
            cudaMemsetAsync(cap.template allocate<unsigned char>(64), 1, 64, cap.stream()));
        cap.eager([&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, tick, &ticks)); });
      });
      FAIL("the capture succeeded");
    } catch (const gc::cuda_error& failure) {
      CHECK(failure.call() == call);
      CHECK(failure.code() == cudaErrorUnknown);
      CHECK_THAT(std::string{failure.what()}, !gctest::contains("must be joined back"));
    }
    CHECK(step.empty());
    CHECK_FALSE(gctest::capturing(stream));
  }
}
