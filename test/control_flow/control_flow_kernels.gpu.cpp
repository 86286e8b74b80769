// GPU tests of conditional nodes decided on the device: a WHILE loop that a kernel stops, an IF
// whose condition a kernel computes from device data, nesting, and recapture.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/replay_loop.hpp>

#include "catch.hpp"
#include "control_flow_kernels.cuh"
#include "cuda_helpers.hpp"

#include <string>

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
    const gc::condition more = graphcap::make_condition(cap, 1, gc::reset_each_launch);
    graphcap::while_(cap, more, [&](auto& body) {
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
    const gc::condition taken = graphcap::make_condition(cap, 0);
    gctest::launch_set_from(cap.stream(), decision.get(), taken);
    graphcap::if_(cap, taken, [&](cudaStream_t body) {
      gctest::launch_count_iteration(body, iterations.get());
    });
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
    const gc::condition enter = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, enter, [&](auto& outer) {
      const gc::condition more = graphcap::make_condition(outer, 1);
      graphcap::while_(outer, more, [&](cudaStream_t body) {
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

TEST_CASE("replay_loop runs a kernel body n times in each form") {
  using form = gc::replay_loop_form;
  gctest::stream stream;
  gctest::device_buffer<int> iterations(1);
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_count_iteration(s, iterations.get());
    gctest::launch_count_iteration(s, iterations.get());
  });
  for (const form asked : {form::automatic, form::flat, form::child_graphs, form::replays}) {
    INFO("form " << gc::to_string(asked));
    gc::replay_loop loop{graph, {.form = asked}};
    for (const int n : {1, 63, 64, 65, 1000}) {
      write(iterations, 0);
      loop.replay(stream, n);
      CUDA_REQUIRE(cudaStreamSynchronize(stream));
      CHECK(read(iterations) == 2 * n);
    }
    CHECK(loop.form() == (asked == form::automatic ? form::flat : asked));
  }
}

TEST_CASE("replay_loop replays a graph with a conditional node, and says why") {
  gctest::stream stream;
  gctest::device_buffer<int> iterations(1);
  gc::graph graph{gc::keep_graph};
  graph.capture(stream, [&](gc::graph::scope& cap) {
    gctest::launch_count_iteration(cap.stream(), iterations.get());
    const gc::condition taken = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, taken, [&](cudaStream_t body) {
      gctest::launch_count_iteration(body, iterations.get());
    });
  });
  gc::replay_loop loop{graph};
  write(iterations, 0);
  loop.replay(stream, 10);
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  CHECK(read(iterations) == 20);
  CHECK(loop.form() == gc::replay_loop_form::replays);
  CHECK_THAT(std::string(loop.form_reason()), gctest::contains("conditional"));
}

TEST_CASE("a condition serves one conditional node: reused by while_ then if_else, refused") {
  // CUDA alone answers cudaErrorInvalidValue from cudaGraphAddNode; graphcap names the node.
  gctest::stream stream;
  gctest::device_buffer<int> counter(1);
  gctest::device_buffer<int> iterations(1);
  gc::graph graph;
  CHECK_THROWS_WITH(graph.capture(stream,
                                  [&](auto& cap) {
                                    const gc::condition more = graphcap::make_condition(cap, 1);
                                    graphcap::while_(cap, more, [&](auto& body) {
                                      gctest::launch_count_down(body.stream(), counter.get(), more);
                                    });
                                    graphcap::if_else(
                                        cap, more, [] {}, [] {});
                                  }),
                    gctest::contains("if_else() was given a condition that already serves the "
                                     "while_() node of this capture"));
  CHECK_FALSE(gctest::capturing(stream));
  graph.capture(stream, [&](auto& cap) { // one condition per node
    const gc::condition more = graphcap::make_condition(cap, 1, gc::reset_each_launch);
    graphcap::while_(cap, more, [&](auto& body) {
      gctest::launch_count_down(body.stream(), counter.get(), more);
    });
    const gc::condition again = graphcap::make_condition(cap, 1, gc::reset_each_launch);
    graphcap::if_else(
        cap, again,
        [&](auto& body) { gctest::launch_count_iteration(body.stream(), iterations.get()); },
        [] {});
  });
  write(counter, 3);
  write(iterations, 0);
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(counter) == 0);
  CHECK(read(iterations) == 1);
}
