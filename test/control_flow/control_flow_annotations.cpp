// Runtime tests: annot::on inside conditional bodies (<graphcap/control_flow.hpp>), on work the
// host can execute (memsets), on the real runtime and on the double, once per node discovery.
// Body nodes are tagged by the scopes opened in their body and by the parent's scopes around the
// conditional, and carry the template ids CUPTI gives them;
// test/control_flow/annotations_bodies.gpu.cpp checks the replayed ids against CUPTI's activity
// records.
#include <graphcap/annotations.hpp>
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include <cupti.h>

#include "annotation_helpers.hpp"
#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gc = graphcap;

namespace {

using annotated_graph = gc::graph_with<gc::annot::on>;
constexpr std::size_t bytes = 64;

void memset_on(cudaStream_t stream, gctest::device_buffer<unsigned char>& buffer, int value) {
  CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), value, buffer.bytes(), stream));
}

/// The graph `stream` captures into now (a body's graph, inside a body).
cudaGraph_t capturing_graph(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  CUDA_REQUIRE(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph));
  REQUIRE(status == cudaStreamCaptureStatusActive);
  return graph;
}

std::vector<cudaGraphNode_t> nodes_of(cudaGraph_t graph) {
  std::size_t count = 0;
  CUDA_REQUIRE(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CUDA_REQUIRE(cudaGraphGetNodes(graph, nodes.data(), &count));
  return nodes;
}

/// The CUPTI ids of `graph`'s nodes, in creation order.
std::vector<std::uint64_t> cupti_ids(cudaGraph_t graph) {
  std::vector<std::uint64_t> ids;
  for (const cudaGraphNode_t node : nodes_of(graph)) {
    std::uint64_t id = 0;
    REQUIRE(cuptiGetGraphNodeId(node, &id) == CUPTI_SUCCESS);
    ids.push_back(id);
  }
  return ids;
}

std::vector<gc::node_annotation> with_name(const std::vector<gc::node_annotation>& all,
                                           std::string_view name) {
  std::vector<gc::node_annotation> found;
  std::copy_if(all.begin(), all.end(), std::back_inserter(found),
               [&](const gc::node_annotation& node) { return node.name() == name; });
  return found;
}

} // namespace

TEST_CASE("scopes inside a body tag its nodes, and a scope around the conditional tags them too") {
  const auto discovery =
      GENERATE(gc::node_discovery::creation_callbacks, gc::node_discovery::graph_walk);
  const gctest::prefer_discovery preferred{discovery};
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph{gc::keep_graph};
  cudaGraph_t outer_body = nullptr;
  cudaGraph_t nested_body = nullptr;
  graph.capture(stream, [&](annotated_graph::scope& cap) {
    memset_on(cap.stream(), buffer, 1); // under no scope
    auto model = cap.mark({{"name", "model"}, {"phase", "decode"}});
    const gc::condition more = graphcap::make_condition(cap, 1);
    graphcap::while_(cap, more, [&](auto& body) {
      outer_body = capturing_graph(body.stream());
      memset_on(body.stream(), buffer, 2); // only the parent's scope
      auto step = body.mark({{"name", "step"}, {"layer", "0"}});
      memset_on(body.stream(), buffer, 3);
      const gc::condition again = graphcap::make_condition(body, 1);
      graphcap::if_(body, again, [&](auto& nested) {
        nested_body = capturing_graph(nested.stream());
        auto inner = nested.mark({{"name", "inner"}});
        memset_on(nested.stream(), buffer, 4);
      });
    });
  });
  REQUIRE(outer_body != nullptr);
  REQUIRE(nested_body != nullptr);
  const std::vector<gc::node_annotation>& annotations = graph.annotations();
  // model: the conditional node and the body's first memset; step: the body's second memset and
  // the nested conditional; inner: the nested body's memset. The first memset: nothing.
  REQUIRE(annotations.size() == 5);
  const auto model = with_name(annotations, "model");
  REQUIRE(model.size() == 2);
  CHECK(std::count_if(model.begin(), model.end(), [](const gc::node_annotation& node) {
          return node.type == cudaGraphNodeTypeConditional;
        }) == 1);
  CHECK(std::count_if(model.begin(), model.end(), [](const gc::node_annotation& node) {
          return node.type == cudaGraphNodeTypeMemset;
        }) == 1);
  const auto step = with_name(annotations, "step");
  REQUIRE(step.size() == 2);
  for (const gc::node_annotation& node : step) {
    CHECK(node.value("layer") == "0");
    CHECK(node.value("phase") == "decode"); // inherited from the scope around the while_
  }
  const auto inner = with_name(annotations, "inner");
  REQUIRE(inner.size() == 1);
  CHECK(inner.front().type == cudaGraphNodeTypeMemset);
  CHECK(inner.front().value("layer") == "0");
  CHECK(inner.front().value("phase") == "decode");

  if (graph.annot_policy().id_source() != gc::node_id_source::cupti) {
    GCTEST_SKIP("CUPTI is held by another tool: the scopes were checked, the body nodes' ids "
                "were not");
  }
  // Each body node carries the id CUPTI gives it in its body graph.
  const std::vector<std::uint64_t> in_outer = cupti_ids(outer_body);
  const std::vector<std::uint64_t> in_nested = cupti_ids(nested_body);
  REQUIRE(in_outer.size() == 3); // memset, memset, the nested conditional
  REQUIRE(in_nested.size() == 1);
  const auto has_template_id = [&](std::uint64_t id) {
    return std::any_of(annotations.begin(), annotations.end(),
                       [&](const gc::node_annotation& node) { return node.template_id == id; });
  };
  CHECK(has_template_id(in_outer[0]));
  CHECK(has_template_id(in_outer[1]));
  CHECK(has_template_id(in_nested[0]));
  std::uint32_t outer_graph_id = 0;
  REQUIRE(cuptiGetGraphId(outer_body, &outer_graph_id) == CUPTI_SUCCESS);
  for (const gc::node_annotation& node : step) {
    CHECK((node.template_id >> 32U) == outer_graph_id);
  }
  // Instantiated: every node is re-keyed and published. The executable numbers the graph's own
  // nodes (a memset, the WHILE node), then the bodies' in capture order: the outer body's three
  // from 2, the nested body's one from 5 (annotations/detail/ids.hpp, executable_node_index).
  graph.instantiate();
  std::uint32_t exec_id = 0;
  REQUIRE(cuptiGetGraphExecId(graph.raw_exec(), &exec_id) == CUPTI_SUCCESS);
  std::uint32_t template_graph = 0;
  REQUIRE(cuptiGetGraphId(graph.raw_graph(), &template_graph) == CUPTI_SUCCESS);
  std::uint32_t nested_graph_id = 0;
  REQUIRE(cuptiGetGraphId(nested_body, &nested_graph_id) == CUPTI_SUCCESS);
  const auto expected_index = [&](std::uint64_t template_id) {
    const auto of_graph = static_cast<std::uint32_t>(template_id >> 32U);
    const auto index = static_cast<std::uint32_t>(template_id);
    if (of_graph == template_graph) {
      return index;
    }
    return (of_graph == outer_graph_id ? 2U : of_graph == nested_graph_id ? 5U : 1000U) + index;
  };
  std::size_t own = 0;
  for (const gc::node_annotation& node : annotations) {
    own += (node.template_id >> 32U) == template_graph ? 1 : 0;
    REQUIRE(node.template_id != 0);
    CHECK(node.id == ((std::uint64_t{exec_id} << 32U) | expected_index(node.template_id)));
    const auto found = gc::find_annotation(node.id);
    REQUIRE(found.has_value());
    CHECK(found->values == node.values);
  }
  CHECK(own == 1); // the conditional node
}

TEST_CASE("a body's scopes alone tag its nodes, and the parent's nodes stay untagged") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  graph.capture(stream, [&](annotated_graph::scope& cap) {
    memset_on(cap.stream(), buffer, 1);
    const gc::condition taken = graphcap::make_condition(cap, 1);
    graphcap::if_else(
        cap, taken,
        [&](auto& body) {
          auto then_scope = body.mark("then");
          memset_on(body.stream(), buffer, 2);
        },
        [&](auto& body) {
          memset_on(body.stream(), buffer, 3); // untagged
          auto else_scope = body.mark("else");
          memset_on(body.stream(), buffer, 4);
          memset_on(body.stream(), buffer, 5);
        });
    memset_on(cap.stream(), buffer, 6);
  });
  const std::vector<gc::node_annotation>& annotations = graph.annotations();
  REQUIRE(annotations.size() == 3);
  CHECK(with_name(annotations, "then").size() == 1);
  CHECK(with_name(annotations, "else").size() == 2);
  for (const gc::node_annotation& node : annotations) {
    CHECK(node.type == cudaGraphNodeTypeMemset);
  }
  graph.replay(stream); // the annotated graph still runs
  stream.synchronize();
  unsigned char value = 0;
  CUDA_REQUIRE(cudaMemcpy(&value, buffer.get(), 1, cudaMemcpyDeviceToHost));
  CHECK(value == 6);
}

TEST_CASE("a body scope on a stream forked inside the body tags the forked work") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gctest::device_buffer<unsigned char> side_buffer(bytes);
  gctest::stream side;
  gctest::event forked;
  gctest::event joined;
  annotated_graph graph;
  graph.capture(stream, [&](annotated_graph::scope& cap) {
    const gc::condition taken = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, taken, [&](auto& body) {
      CUDA_REQUIRE(cudaEventRecord(forked, body.stream()));
      CUDA_REQUIRE(cudaStreamWaitEvent(side, forked));
      {
        auto on_side = body.mark("side"); // opened on the body's stream: tags the side work too
        memset_on(side, side_buffer, 7);
      }
      CUDA_REQUIRE(cudaEventRecord(joined, side));
      CUDA_REQUIRE(cudaStreamWaitEvent(body.stream(), joined));
      memset_on(body.stream(), buffer, 8);
    });
  });
  const auto tagged = with_name(graph.annotations(), "side");
  REQUIRE(tagged.size() == 1);
  CHECK(tagged.front().type == cudaGraphNodeTypeMemset);
  CHECK(graph.annotations().size() == 1);
}

TEST_CASE("a failed capture with body scopes leaves no annotation behind") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  CHECK_THROWS(graph.capture(stream, [&](annotated_graph::scope& cap) {
    const gc::condition taken = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, taken, [&](auto& body) {
      auto doomed = body.mark("doomed");
      memset_on(body.stream(), buffer, 1);
      throw std::runtime_error("work failed");
    });
  }));
  CHECK(graph.annotations().empty());
  CHECK_FALSE(gctest::capturing(stream));
  // The next capture annotates normally.
  graph.capture(stream, [&](annotated_graph::scope& cap) {
    const gc::condition taken = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, taken, [&](auto& body) {
      auto fine = body.mark("fine");
      memset_on(body.stream(), buffer, 2);
    });
  });
  CHECK(with_name(graph.annotations(), "fine").size() == 1);
}
