// Piecewise graphs with annot::on: a cap.mark() scope open at a break tags the nodes of the
// segments on both sides of it, and closes where its marker does.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

using annotated = gc::graph_with<gc::annot::on>;

std::vector<std::string> names(const std::vector<gc::node_annotation>& annotations) {
  std::vector<std::string> found;
  for (const gc::node_annotation& node : annotations) {
    found.emplace_back(node.name());
  }
  return found;
}

} // namespace

TEST_CASE("piecewise with annot::on: a scope open at a break tags both segments") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(256);
  gc::piecewise_graph<annotated> step;
  step.capture(stream, [&](auto& cap) {
    {
      auto attention = cap.mark("attention");
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, 64, cap.stream())); // segment 0, tagged
      cap.eager([&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 2, 64, s)); });
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get() + 64, 3, 64, cap.stream())); // segment 1, tagged
      CHECK(attention.active() == (step.segment_count() == 2));
    }
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get() + 128, 4, 64, cap.stream())); // segment 1, not
  });
  REQUIRE(step.segment_count() == 2);
  CHECK(names(step.segment(0).annotations()) == std::vector<std::string>{"attention"});
  CHECK(names(step.segment(1).annotations()) == std::vector<std::string>{"attention"});
  CHECK(step.segment(1).node_count() == 2);
  step.replay(stream);
  stream.synchronize();
}
