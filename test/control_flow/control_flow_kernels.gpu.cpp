// GPU tests of conditional nodes decided on the device: a WHILE loop that a kernel stops, an IF
// whose condition a kernel computes from device data, nesting, and recapture.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "control_flow_kernels.cuh"
#include "cuda_helpers.hpp"

namespace gc = graphcap;

namespace {

int read(const gctest::device_buffer<int>& value) {
  int host = -1;
  CUDA_REQUIRE(cudaMemcpy(&host, value.get(), sizeof host, cudaMemcpyDeviceToHost));
  return host;
}

void write(const gctest::device_buffer<int>& value, int host) {
  CUDA_REQUIRE(cudaMemcpy(value.get(), &host, sizeof host, cudaMemcpyHostToDevice));
}

} // namespace

TEST_CASE("while_: the body runs until a kernel in it clears the condition") {
  gctest::stream stream;
  gctest::device_buffer<int> counter(1);
  gctest::device_buffer<int> iterations(1);
  gc::graph graph;
  graph.capture(stream, [&](gc::graph::scope& cap) {
    const gc::condition more = cap.condition(1, gc::reset_each_launch);
    cap.while_(more, [&](auto& body) {
      gctest::launch_count_iteration(body.stream(), iterations.get());
      gctest::launch_count_down(body.stream(), counter.get(), more);
    });
  });
  for (const int trips : {5, 1, 100}) {
    write(counter, trips);
    write(iterations, 0);
    graph.replay(stream);
    stream.synchronize();
    CHECK(read(iterations) == trips);
    CHECK(read(counter) == 0);
  }
}

TEST_CASE("if_: a kernel computes the condition from device data") {
  gctest::stream stream;
  gctest::device_buffer<int> decision(1);
  gctest::device_buffer<int> iterations(1);
  gc::lean_graph graph;
  graph.capture(stream, [&](auto& cap) {
    const gc::condition taken = cap.condition(0);
    gctest::launch_set_from(cap.stream(), decision.get(), taken);
    cap.if_(taken,
            [&](cudaStream_t body) { gctest::launch_count_iteration(body, iterations.get()); });
  });
  write(iterations, 0);
  for (const int value : {1, 0, 1}) {
    write(decision, value);
    graph.replay(stream);
    stream.synchronize();
  }
  CHECK(read(iterations) == 2);
}

TEST_CASE("a while_ inside an if_, with conditions of their own graphs") {
  gctest::stream stream;
  gctest::device_buffer<int> counter(1);
  gctest::device_buffer<int> iterations(1);
  gc::lean_graph graph;
  graph.capture(stream, [&](auto& cap) {
    const gc::condition enter = cap.condition(1);
    cap.if_(enter, [&](auto& outer) {
      const gc::condition more = outer.condition(1);
      outer.while_(more, [&](cudaStream_t body) {
        gctest::launch_count_iteration(body, iterations.get());
        gctest::launch_count_down(body, counter.get(), more);
      });
    });
  });
  write(counter, 7);
  write(iterations, 0);
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(iterations) == 7);
}
