// GPU tests: capture diagnostics among kernel launches (which the double cannot run). A launch
// is one or more runtime calls as CUPTI counts them (the launch and its configuration helpers),
// so these tests check which call is named, and that the ordinals grow with the launches, not
// their exact values.
#include <graphcap/annotations.hpp>
#include <graphcap/diagnostics.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "diagnostics_skip.hpp"
#include "kernels.cuh"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace gc = graphcap;

namespace {

constexpr std::size_t count = 1024;

/// The culprit of a capture of `launches` kernels followed by a synchronize of the stream.
gc::offending_call synchronize_after_launches(int launches) {
  gctest::stream stream;
  gctest::device_buffer<float> data(count);
  gc::graph_with<gc::annot::on> graph;
  try {
    graph.capture(stream, [&](auto& cap) {
      const auto scope = cap.mark("attention");
      for (int i = 0; i < launches; ++i) {
        gctest::launch_add_scalar(cap.stream(), data.get(), 1.0F, count);
      }
      static_cast<void>(cudaStreamSynchronize(cap.stream()));
    });
    FAIL("the capture did not fail");
  } catch (const gc::capture_error& error) {
    const std::string text = error.what();
    INFO(text);
    CHECK(text.find("invalidated by cudaStreamSynchronize (call ") != std::string::npos);
    CHECK(text.find(", thread 1, inside scope 'attention'), which returned "
                    "cudaErrorStreamCaptureUnsupported") != std::string::npos);
  }
  static_cast<void>(cudaGetLastError());
  const std::optional<gc::offending_call> call = gc::capture_diagnostics::last_offending_call();
  REQUIRE(call.has_value());
  return *call;
}

} // namespace

TEST_CASE("diagnostics name a synchronize after kernel launches, counting the launches") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  static_cast<void>(synchronize_after_launches(1)); // the kernel's first launch loads it
  const gc::offending_call after_one = synchronize_after_launches(1);
  const gc::offending_call after_three = synchronize_after_launches(3);
  CHECK(after_one.function == "cudaStreamSynchronize");
  CHECK(after_one.scope == "attention");
  CHECK(after_one.thread == 1);
  CHECK(after_three.function == "cudaStreamSynchronize");
  // Two more launches, each at least one call, the same number of calls each.
  const std::uint64_t per_launch = (after_three.ordinal - after_one.ordinal) / 2;
  CHECK(after_three.ordinal > after_one.ordinal);
  CHECK(per_launch >= 1);
  CHECK(after_three.ordinal - after_one.ordinal == 2 * per_launch);
  WARN("a kernel launch counts as " << per_launch << " call(s); the synchronize after one launch "
                                    << "is call " << after_one.ordinal);
}

TEST_CASE("diagnostics on: a capture of kernels that breaks no rule replays as without them") {
  const gc::capture_diagnostics diagnostics;
  GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
  gctest::stream stream;
  gctest::device_buffer<float> data(count);
  gctest::launch_fill(stream, data.get(), 0.0F, count);
  gc::graph graph;
  graph.capture(stream,
                [&](cudaStream_t s) { gctest::launch_add_scalar(s, data.get(), 1.0F, count); });
  for (int i = 0; i < 3; ++i) {
    graph.replay(stream);
  }
  stream.synchronize();
  CHECK(gctest::sum(data.get(), count) == 3.0 * count);
  CHECK_FALSE(gc::capture_diagnostics::last_offending_call().has_value());
}
