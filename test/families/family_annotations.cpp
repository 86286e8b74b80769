// Runtime tests: a shape family of annot::on graphs (graphcap/family.hpp): every key's graph
// records its own annotations, and a one-executable switch publishes the new key's for the shared
// executable. Host-executable work, on the test double and the GPU.
#include <graphcap/annotations.hpp>
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gc = graphcap;

namespace {

using annotated = gc::graph_with<gc::mode::thread_local_, gc::pool::shared, gc::annot::on>;

std::size_t marked(const annotated& graph, std::string_view name) {
  const auto& all = graph.annotations();
  return static_cast<std::size_t>(
      std::count_if(all.begin(), all.end(),
                    [&](const gc::node_annotation& node) { return node.name() == name; }));
}

} // namespace

TEST_CASE("graph_family of annot::on graphs: annotations per key's graph") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device{4096};
  std::vector<unsigned char> host(4096, 0);
  auto work = [&](std::size_t key, annotated::scope& cap) {
    const auto region = cap.mark(key == 1 ? "small" : "large");
    gctest::fill_and_copy(cap.stream(), device, host, static_cast<int>(key));
  };
  SECTION("one graph per key") {
    gc::graph_family<std::size_t, annotated> family;
    REQUIRE(family.capture_all({1, 2}, stream, work).complete());
    CHECK(marked(*family.find(1), "small") == 2);
    CHECK(marked(*family.find(2), "large") == 2);
    CHECK(marked(*family.find(2), "small") == 0);
    CHECK(family.replay_at_least(2, stream) == 2);
    stream.synchronize();
    CHECK(host == std::vector<unsigned char>(4096, 2));
  }
  SECTION("one executable: a switch publishes the new key's annotations") {
    gc::graph_family<std::size_t, annotated> family{{.one_executable = true}};
    REQUIRE(family.capture_all({1, 2}, stream, work).complete());
    CHECK(marked(*family.find(1), "small") == 2);
    CHECK(family.replay_at_least(2, stream) == 2);
    CHECK(marked(*family.find(2), "large") == 2);
    CHECK(marked(*family.find(2), "small") == 0);
    stream.synchronize();
    CHECK(host == std::vector<unsigned char>(4096, 2));
  }
}
