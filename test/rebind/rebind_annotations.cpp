// set_enabled by annotation scope (annot::on records each scope's nodes): every node of the
// scopes of that name is turned off and on; a name no scope has is refused.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/rebind.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

namespace gc = graphcap;

namespace {

unsigned char first_byte(const gctest::device_buffer<unsigned char>& buffer) {
  unsigned char value = 0;
  CUDA_REQUIRE(cudaMemcpy(&value, buffer.get(), 1, cudaMemcpyDeviceToHost));
  return value;
}

} // namespace

TEST_CASE("set_enabled by scope: the nodes of every scope of that name go off and on") {
  gctest::stream stream;
  const gctest::device_buffer<unsigned char> kept(64);
  const gctest::device_buffer<unsigned char> first(64);
  const gctest::device_buffer<unsigned char> second(64);
  for (const auto* buffer : {&kept, &first, &second}) {
    CUDA_REQUIRE(cudaMemset(buffer->get(), 9, 64));
  }
  CUDA_REQUIRE(cudaDeviceSynchronize()); // cudaMemset is not ordered with the test's stream
  gc::graph_with<gc::annot::on> graph{gc::keep_graph};
  graph.capture(stream, [&](auto& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(kept.get(), 1, 64, cap.stream()));
    {
      auto dump = cap.mark("dump");
      CUDA_REQUIRE(cudaMemsetAsync(first.get(), 2, 64, cap.stream()));
    }
    {
      auto dump = cap.mark("dump"); // a second scope of the same name
      CUDA_REQUIRE(cudaMemsetAsync(second.get(), 3, 64, cap.stream()));
    }
  });
  graph.instantiate();
  gc::set_enabled(graph, "dump", false);
  graph.replay(stream);
  stream.synchronize();
  CHECK(first_byte(kept) == 1);
  CHECK(first_byte(first) == 9);
  CHECK(first_byte(second) == 9);
  gc::set_enabled(graph, "dump", true);
  graph.replay(stream);
  stream.synchronize();
  CHECK(first_byte(first) == 2);
  CHECK(first_byte(second) == 3);
  CHECK_THROWS_WITH(gc::set_enabled(graph, "absent", false),
                    gctest::contains("no annotation scope named 'absent'"));
}
