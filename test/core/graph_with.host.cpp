// Host tests: configurations picked with graph_with behave as the basic_graph they name.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"

#include <type_traits>

namespace gc = graphcap;

TEST_CASE("graph_with sorts policies into their slots, whatever their order") {
  using a = gc::graph_with<gc::liveness::off, gc::mode::relaxed>;
  using b = gc::graph_with<gc::mode::relaxed, gc::liveness::off>;
  STATIC_REQUIRE(std::is_same_v<a, b>);
  STATIC_REQUIRE(std::is_same_v<a::mode_type, gc::mode::relaxed>);
  STATIC_REQUIRE(std::is_same_v<a::pool_type, gc::pool::off>);
  STATIC_REQUIRE(std::is_same_v<a::annot_type, gc::annot::off>);
  STATIC_REQUIRE(std::is_same_v<a::liveness_type, gc::liveness::off>);
}

TEST_CASE("a graph_with configuration is an ordinary graph") {
  gc::graph_with<gc::mode::thread_local_> graph;
  CHECK(graph.empty());
  CHECK(graph.state() == gc::graph_state::empty);
  CHECK(graph.node_count() == 0);
  CHECK(graph.device() == -1);
  CHECK_FALSE(graph.keeps_graph());
}
