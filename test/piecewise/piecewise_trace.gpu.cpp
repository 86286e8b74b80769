// A piecewise step's kernels in the annotation trace (GPU: CUPTI's activity records): the
// segments' kernels land in the lanes of the scopes that tagged them, across a break, as any
// graph's do; an island's kernels are launched eagerly and land in their stream's lane.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"

#include <cstddef>
#include <map>
#include <string>

namespace gc = graphcap;

namespace {

constexpr std::size_t n = 1024;

} // namespace

TEST_CASE("the trace of a piecewise step: segment kernels by scope, island kernels by stream") {
  if (gc::annotation_id_source() != gc::node_id_source::cupti) {
    GCTEST_SKIP("CUPTI is held by another tool or unavailable: no trace to check");
  }
  gctest::stream stream;
  gctest::device_buffer<float> data(n);
  gc::piecewise_graph<gc::graph_with<gc::annot::on>> step;
  step.capture(stream, [&](auto& cap) {
    {
      auto attention = cap.mark("attention");
      gctest::launch_fill(cap.stream(), data.get(), 1.0F, n); // segment 0
      cap.eager([&](cudaStream_t s) { gctest::launch_add_scalar(s, data.get(), 1.0F, n); });
      gctest::launch_add_scalar(cap.stream(), data.get(), 1.0F, n); // segment 1, same scope
    }
    auto mlp = cap.mark("mlp");
    gctest::launch_add_scalar(cap.stream(), data.get(), 1.0F, n); // segment 1
  });
  REQUIRE(step.segment_count() == 2);
  gc::trace_recorder recorder;
  REQUIRE(recorder.available());
  constexpr int replays = 3;
  for (int i = 0; i < replays; ++i) {
    step.replay(stream);
  }
  recorder.stop();
  std::map<std::string, int> lanes; // lane -> kernels
  for (const gc::kernel_record& kernel : recorder.kernels()) {
    const auto annotation = gc::find_annotation(kernel.graph_node_id);
    if (kernel.graph_node_id == 0) {
      ++lanes["eager"];
    } else if (annotation.has_value()) {
      ++lanes[std::string{annotation->name()}];
    } else {
      ++lanes["graph (unannotated)"];
    }
  }
  CHECK(lanes["attention"] == 2 * replays); // the fill in segment 0, the add in segment 1
  CHECK(lanes["mlp"] == replays);
  CHECK(lanes["eager"] == replays); // the island's kernel, once per replay
  CHECK(lanes["graph (unannotated)"] == 0);
  stream.synchronize();
  CHECK(gctest::sum(data.get(), n) == 4.0 * n);
  gctest::require_no_last_error();
}
