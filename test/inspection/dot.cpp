// Runtime tests of graphcap::write_dot (<graphcap/dot.hpp>) on graphs the host can execute
// (memsets, copies, conditional nodes), run on both backends: the DOT is parsed back into
// nodes, edges and clusters and compared with the graph that was captured.
#include <graphcap/annotations.hpp>
#include <graphcap/control_flow.hpp>
#include <graphcap/dot.hpp>
#include <graphcap/graphcap.hpp>

#include "annotation_helpers.hpp"
#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "dot_parse.hpp"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace gc = graphcap;

namespace {

using annotated_graph = gc::graph_with<gc::annot::on>;

using gctest::parse;
using gctest::parsed_dot;

} // namespace

TEST_CASE("write_dot: a fork and join of memsets and a copy, with every edge CUDA lists") {
  gctest::stream stream;
  gctest::stream side;
  gctest::event forked;
  gctest::event joined;
  gctest::device_buffer<unsigned char> memory(256);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 1, 16, s));
    CUDA_REQUIRE(cudaEventRecord(forked, s));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, forked));
    CUDA_REQUIRE(cudaMemsetAsync(memory.get() + 16, 2, 32, side));
    CUDA_REQUIRE(cudaMemcpyAsync(memory.get() + 64, memory.get(), 48, cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaEventRecord(joined, side));
    CUDA_REQUIRE(cudaStreamWaitEvent(s, joined));
    CUDA_REQUIRE(cudaMemsetAsync(memory.get() + 128, 3, 64, s));
  });
  const parsed_dot dot = parse(gc::dot_text(graph, {"fork and join"}));
  INFO(gc::dot_text(graph));
  CHECK(dot.closed);
  CHECK(dot.cluster_count == 0);
  CHECK(dot.label_of.size() == graph.node_count());
  CHECK(dot.label_of.size() == 4);
  CHECK(dot.has_edge("memset\n16 bytes = 1", "memset\n32 bytes = 2"));
  CHECK(dot.has_edge("memset\n16 bytes = 1", "memcpy\n48 bytes"));
  CHECK(dot.has_edge("memcpy\n48 bytes", "memset\n64 bytes = 3"));
  CHECK(dot.has_edge("memset\n32 bytes = 2", "memset\n64 bytes = 3"));
  CHECK(dot.edges.size() == 4);
  CHECK(gc::dot_text(graph, {"fork and join"}).find("label=\"fork and join\"") !=
        std::string::npos);
}

TEST_CASE("write_dot: annotation scopes are nested clusters") {
  const auto discovery =
      GENERATE(gc::node_discovery::creation_callbacks, gc::node_discovery::graph_walk);
  const gctest::prefer_discovery prefer{discovery};
  gctest::stream stream;
  gctest::device_buffer<unsigned char> memory(512);
  annotated_graph graph{gc::keep_graph};
  graph.capture(stream, [&](annotated_graph::scope& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 0, 8, cap.stream()));
    {
      auto outer = cap.mark("outer");
      CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 1, 16, cap.stream()));
      {
        auto inner = cap.mark({{"layer", "3"}, {"kind", "mlp"}});
        CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 2, 32, cap.stream()));
        CUDA_REQUIRE(cudaMemcpyAsync(memory.get() + 256, memory.get(), 48, cudaMemcpyDeviceToDevice,
                                     cap.stream()));
      }
      CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 4, 80, cap.stream()));
    }
    {
      auto second = cap.mark("outer"); // another scope of the same name: its own cluster
      CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 5, 96, cap.stream()));
    }
    CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 3, 64, cap.stream()));
  });
  const std::string text = gc::dot_text(graph);
  INFO(text);
  const parsed_dot dot = parse(text);
  CHECK(dot.closed);
  CHECK(dot.label_of.size() == 7);
  CHECK(dot.cluster_count == 3);
  using path = std::vector<std::string>;
  CHECK(dot.clusters_of("memset\n8 bytes = 0").empty());
  CHECK(dot.clusters_of("memset\n16 bytes = 1") == path{"outer"});
  CHECK(dot.clusters_of("memset\n32 bytes = 2") == path{"outer", "layer=3, kind=mlp"});
  CHECK(dot.clusters_of("memcpy\n48 bytes") == path{"outer", "layer=3, kind=mlp"});
  CHECK(dot.clusters_of("memset\n80 bytes = 4") == path{"outer"});
  CHECK(dot.clusters_of("memset\n96 bytes = 5") == path{"outer"});
  CHECK(dot.clusters_of("memset\n64 bytes = 3").empty());
  // The two "outer" scopes are two clusters: the 96-byte memset is not drawn with the others.
  const std::size_t first_outer = text.find("label=\"outer\"");
  const std::size_t second_outer = text.find("label=\"outer\"", first_outer + 1);
  CHECK(second_outer != std::string::npos);
  CHECK(dot.has_edge("memset\n8 bytes = 0", "memset\n16 bytes = 1"));
  CHECK(dot.has_edge("memcpy\n48 bytes", "memset\n80 bytes = 4"));
  CHECK(dot.has_edge("memset\n96 bytes = 5", "memset\n64 bytes = 3"));
  CHECK(dot.edges.size() == 6);
}

TEST_CASE("write_dot: a conditional node's bodies are clusters, inside the node's scope") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> memory(512);
  annotated_graph graph{gc::keep_graph};
  graph.capture(stream, [&](annotated_graph::scope& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 1, 16, cap.stream()));
    auto loop = cap.mark("loop");
    const gc::condition more = graphcap::make_condition(cap, 0);
    graphcap::while_(cap, more, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 2, 32, body));
      CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 3, 48, body));
    });
    const gc::condition pick = graphcap::make_condition(cap, 1);
    graphcap::if_else(
        cap, pick,
        [&](cudaStream_t then) { CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 4, 64, then)); },
        [](cudaStream_t) {}); // an empty else
  });
  const std::string text = gc::dot_text(graph);
  INFO(text);
  const parsed_dot dot = parse(text);
  CHECK(dot.closed);
  using path = std::vector<std::string>;
  CHECK(dot.clusters_of("memset\n16 bytes = 1").empty());
  CHECK(dot.clusters_of("memset\n32 bytes = 2") == path{"loop", "while_ body"});
  CHECK(dot.clusters_of("memset\n48 bytes = 3") == path{"loop", "while_ body"});
  CHECK(dot.clusters_of("memset\n64 bytes = 4") == path{"loop", "if_else body 0"});
  CHECK(dot.has_edge("memset\n32 bytes = 2", "memset\n48 bytes = 3"));
  // Each conditional node points at its bodies' clusters; the empty else gets a placeholder.
  std::vector<std::string> conditionals;
  for (const auto& [id, label] : dot.label_of) {
    if (label == "conditional\nwhile_" || label == "conditional\nif_else") {
      conditionals.push_back(id);
      CHECK(dot.clusters.at(id) == path{"loop"});
    }
  }
  REQUIRE(conditionals.size() == 2);
  std::size_t body_edges = 0;
  for (std::size_t i = 0; i < dot.edges.size(); ++i) {
    if (dot.edge_attributes[i].find("lhead=cluster_") != std::string::npos) {
      ++body_edges;
      CHECK(std::find(conditionals.begin(), conditionals.end(), dot.edges[i].first) !=
            conditionals.end());
    }
  }
  CHECK(body_edges == 3);
  const std::string first = dot.id_of("memset\n16 bytes = 1");
  CHECK(std::count_if(dot.edges.begin(), dot.edges.end(), [&](const auto& edge) {
          return edge.first == first && std::find(conditionals.begin(), conditionals.end(),
                                                  edge.second) != conditionals.end();
        }) == 1);
  REQUIRE_FALSE(dot.id_of("(empty)").empty());
  CHECK(dot.clusters_of("(empty)") == path{"loop", "if_else body 1"});
}

TEST_CASE("write_dot: needs the template, and a writable path") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> memory(16);
  gc::lean_graph plain;
  plain.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 1, 16, s)); });
  CHECK_THROWS_WITH(gc::dot_text(plain), gctest::contains("write_dot() needs the graph's "
                                                          "template") &&
                                             gctest::contains("graphcap::keep_graph"));
  gc::lean_graph kept{gc::keep_graph};
  CHECK_THROWS_WITH(gc::dot_text(kept),
                    "graphcap: cannot write_dot() while the graph is empty: capture first");
  kept.capture(stream,
               [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(memory.get(), 1, 16, s)); });
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "graphcap_dot.dot";
  gc::write_dot(kept, file.string());
  std::ifstream in(file);
  const std::string written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CHECK(written == gc::dot_text(kept));
  std::filesystem::remove(file);
  CHECK_THROWS_AS(gc::write_dot(kept, std::string{"/nonexistent-directory/graph.dot"}), gc::error);
  gctest::require_no_last_error();
}
