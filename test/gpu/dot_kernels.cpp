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
  const std::string saxpy = "gctest::(anonymous namespace)::saxpy(float const*, float*, float, "
                            "unsigned long)";
  const std::string atomic_sum = "gctest::(anonymous namespace)::atomic_sum(float const*, "
                                 "float*, unsigned long)";
  using path = std::vector<std::string>;
  CHECK(dot.clusters_of(saxpy) == path{"layer"});
  CHECK(dot.clusters_of("memset\n4 bytes = 0") == path{"layer", "reduce"});
  CHECK(dot.clusters_of(atomic_sum) == path{"layer", "reduce"});
  CHECK(dot.has_edge(saxpy, "memset\n4 bytes = 0"));
  CHECK(dot.has_edge("memset\n4 bytes = 0", atomic_sum));
  gctest::require_no_last_error();
}
