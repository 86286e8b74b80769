// Piecewise graphs with annot::on: a cap.mark() scope open at a break tags the nodes of the
// segments on both sides of it, and closes where its marker does; write_dot draws the segments
// as clusters with the islands between them.
#include <graphcap/annotations.hpp>
#include <graphcap/dot.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "dot_parse.hpp"

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

TEST_CASE("write_dot of a piecewise graph: segments as clusters, islands between them") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(256);
  gc::piecewise_graph<annotated> step{gc::keep_graph};
  step.capture(stream, [&](auto& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, 16, cap.stream()));
    {
      auto attention = cap.mark("attention");
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 2, 32, cap.stream()));
      cap.eager([&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 9, 8, s)); });
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 3, 48, cap.stream()));
    }
    cap.eager([&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 9, 8, s)); });
    cap.eager([&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 9, 8, s)); });
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 4, 64, cap.stream()));
  });
  REQUIRE(step.segment_count() == 4); // segment 2 is empty: two islands in a row
  CHECK(step.state() == gc::graph_state::captured);
  const std::string text = gc::dot_text(step);
  INFO(text);
  const gctest::parsed_dot dot = gctest::parse(text);
  CHECK(dot.closed);
  CHECK(dot.label_of.size() == 4 + 3); // the memsets and the islands
  using path = std::vector<std::string>;
  CHECK(dot.clusters_of("memset\n16 bytes = 1") == path{"segment 0"});
  CHECK(dot.clusters_of("memset\n32 bytes = 2") == path{"segment 0", "attention"});
  CHECK(dot.clusters_of("memset\n48 bytes = 3") == path{"segment 1", "attention"});
  CHECK(dot.clusters_of("memset\n64 bytes = 4") == path{"segment 3"});
  CHECK(dot.clusters_of("island 0\nattention").empty()); // islands sit outside the segments
  CHECK(dot.has_edge("memset\n16 bytes = 1", "memset\n32 bytes = 2"));
  CHECK(dot.has_edge("memset\n32 bytes = 2", "island 0\nattention"));
  CHECK(dot.has_edge("island 0\nattention", "memset\n48 bytes = 3"));
  CHECK(dot.has_edge("memset\n48 bytes = 3", "island 1"));
  CHECK(dot.has_edge("island 1", "island 2")); // across the empty segment 2
  CHECK(dot.has_edge("island 2", "memset\n64 bytes = 4"));
  CHECK(dot.edges.size() == 6);
  CHECK(text.find("4 segments, 3 islands, 4 nodes") != std::string::npos);

  step.replay(stream); // instantiated at its first replay, as a keep_graph graph is
  stream.synchronize();
  CHECK(step.state() == gc::graph_state::instantiated);
  CHECK(gc::dot_text(step) == text); // the templates are kept

  gc::piecewise_graph<annotated> unkept;
  unkept.capture(
      stream, [&](auto& cap) { CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, 16, cap.stream())); });
  CHECK_THROWS_AS(gc::dot_text(unkept), gc::state_error);
  CHECK_THROWS_AS(gc::dot_text(gc::piecewise_graph<annotated>{gc::keep_graph}), gc::state_error);
}
