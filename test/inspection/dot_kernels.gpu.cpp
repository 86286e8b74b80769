// GPU tests of graphcap::write_dot with real kernels: kernel nodes carry their demangled names,
// inside the clusters of their annotation scopes.
#include <graphcap/annotations.hpp>
#include <graphcap/dot.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "dot_parse.hpp"
#include "verify_kernels.cuh"

#include <cstddef>
#include <string>
#include <vector>

namespace gc = graphcap;

TEST_CASE("write_dot on the GPU: kernel nodes are named by their demangled kernels") {
  constexpr std::size_t n = 1024;
  gctest::device_buffer<float> x(n);
  gctest::device_buffer<float> y(n);
  gctest::device_buffer<float> total(1);
  using annotated_graph = gc::graph_with<gc::annot::on>;
  annotated_graph graph{gc::keep_graph};
  graph.capture([&](annotated_graph::scope& cap) {
    auto layer = cap.mark("layer");
    gctest::launch_saxpy(cap.stream(), x.get(), y.get(), 2.0F, n);
    auto reduce = cap.mark("reduce");
    gctest::launch_atomic_sum(cap.stream(), y.get(), total.get(), n);
  });
  const std::string text = gc::dot_text(graph);
  INFO(text);
  const gctest::parsed_dot dot = gctest::parse(text);
  CHECK(dot.closed);
  REQUIRE(dot.label_of.size() == 3);
  // Demangled: the parameter types show (nvcc may spell the anonymous namespace its own way).
  const std::string saxpy = dot.id_containing("saxpy(float const*, float*, float, unsigned long)");
  const std::string atomic_sum =
      dot.id_containing("atomic_sum(float const*, float*, unsigned long)");
  const std::string memset = dot.id_of("memset\n4 bytes = 0");
  REQUIRE_FALSE(saxpy.empty());
  REQUIRE_FALSE(atomic_sum.empty());
  REQUIRE_FALSE(memset.empty());
  CHECK(dot.label_of.at(saxpy).rfind("gctest::", 0) == 0);
  using path = std::vector<std::string>;
  CHECK(dot.clusters.at(saxpy) == path{"layer"});
  CHECK(dot.clusters.at(memset) == path{"layer", "reduce"});
  CHECK(dot.clusters.at(atomic_sum) == path{"layer", "reduce"});
  CHECK(dot.has_edge_between(saxpy, memset));
  CHECK(dot.has_edge_between(memset, atomic_sum));
  CHECK(dot.edges.size() == 2);
  gctest::require_no_last_error();
}
