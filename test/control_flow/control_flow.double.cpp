// Conditional nodes whose values the test scripts on the CUDA test double (kernels, which set
// conditions on a GPU, do not run there): WHILE loops of a known trip count, a loop inside a
// branch, the value each launch starts from.
#include <graphcap/control_flow.hpp>
#include <graphcap/control_flow/device_loop.hpp> // the structure: the kernels are a .cu file's
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 64;

int first_byte(const gctest::device_buffer<unsigned char>& buffer) {
  unsigned char value = 0;
  CUDA_REQUIRE(cudaMemcpy(&value, buffer.get(), 1, cudaMemcpyDeviceToHost));
  return value;
}

} // namespace

TEST_CASE("while_: the body runs as long as the condition stays non-zero") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> target(bytes);
  gc::lean_graph graph;
  gc::condition more;
  graph.capture(stream, [&](auto& cap) {
    more = graphcap::make_condition(cap, 1);
    graphcap::while_(cap, more, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaMemsetAsync(target.get(), 9, bytes, body));
    });
  });
  cuda_double::script_conditional(more.handle(), {1, 1, 1, 0}); // a kernel would clear it
  graph.replay(stream);
  CHECK(cuda_double::conditional_evaluations(more.handle()) == 4); // 3 iterations, 4 checks
  CHECK(first_byte(target) == 9);
  cuda_double::script_conditional(more.handle(), {0}); // the next launch: no iteration
  CUDA_REQUIRE(cudaMemset(target.get(), 0, bytes));
  graph.replay(stream);
  CHECK(cuda_double::conditional_evaluations(more.handle()) == 5);
  CHECK(first_byte(target) == 0);
}

TEST_CASE("two graphs' conditions share a handle value, and each graph replays on its own") {
  // CUDA numbers condition handles per graph (the H200: 1, 2, ... in each), so the first
  // condition of every graph has the same handle: graphcap must keep them apart by graph.
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> looped(bytes);
  gctest::device_buffer<unsigned char> branched(bytes);
  CUDA_REQUIRE(cudaMemset(looped.get(), 0, bytes));
  CUDA_REQUIRE(cudaMemset(branched.get(), 0, bytes));
  gc::lean_graph a;
  gc::lean_graph b;
  gc::condition more;
  gc::condition taken;
  a.capture(stream, [&](auto& cap) {
    more = graphcap::make_condition(cap, 1);
    graphcap::while_(cap, more, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaMemsetAsync(looped.get(), 7, bytes, body));
    });
  });
  b.capture(stream, [&](auto& cap) {
    taken = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, taken, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaMemsetAsync(branched.get(), 4, bytes, body));
    });
  });
  CHECK(more.handle() == taken.handle());
  cuda_double::script_conditional(a.raw_exec(), more.handle(), {1, 1, 0});
  a.replay(stream);
  CHECK(cuda_double::conditional_evaluations(a.raw_exec(), more.handle()) == 3);
  CHECK(cuda_double::conditional_evaluations(b.raw_exec(), taken.handle()) == 0);
  CHECK(first_byte(looped) == 7);
  CHECK(first_byte(branched) == 0);
  b.replay(stream); // its own value: 1 at every launch (a's loop ended on 0)
  CHECK(first_byte(branched) == 4);
  CHECK(cuda_double::conditional_evaluations(a.raw_exec(), more.handle()) == 3);
  CHECK(cuda_double::conditional_evaluations(b.raw_exec(), taken.handle()) == 1);
  cuda_double::script_conditional(b.raw_exec(), taken.handle(), {0});
  CUDA_REQUIRE(cudaMemset(branched.get(), 0, bytes));
  b.replay(stream);
  CHECK(first_byte(branched) == 0);
}

TEST_CASE("each launch starts from the initial value with reset_each_launch, not without") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> target(bytes);
  for (const gc::condition_reset reset : {gc::reset_each_launch, gc::keep_across_launches}) {
    gc::lean_graph graph;
    gc::condition taken;
    graph.capture(stream, [&](auto& cap) {
      taken = graphcap::make_condition(cap, 1, reset);
      graphcap::if_(cap, taken, [&](cudaStream_t body) {
        CUDA_REQUIRE(cudaMemsetAsync(target.get(), 5, bytes, body));
      });
    });
    cuda_double::set_conditional(taken.handle(), 0); // as a kernel of an earlier launch would
    CUDA_REQUIRE(cudaMemset(target.get(), 0, bytes));
    graph.replay(stream);
    INFO((reset == gc::reset_each_launch ? "reset each launch" : "kept across launches"));
    CHECK(first_byte(target) == (reset == gc::reset_each_launch ? 5 : 0));
  }
}

TEST_CASE("a while_ inside an if_: each decided by its own condition") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> target(bytes);
  gc::graph graph;
  gc::condition enter;
  gc::condition more;
  graph.capture(stream, [&](gc::graph::scope& cap) {
    enter = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, enter, [&](auto& outer) {
      more = graphcap::make_condition(outer, 1);
      graphcap::while_(outer, more, [&](auto& body) {
        auto* temporary = body.template allocate<unsigned char>(bytes);
        CUDA_REQUIRE(cudaMemsetAsync(temporary, 3, bytes, body.stream()));
        CUDA_REQUIRE(cudaMemcpyAsync(target.get(), temporary, bytes, cudaMemcpyDeviceToDevice,
                                     body.stream()));
      });
    });
  });
  cuda_double::script_conditional(more.handle(), {1, 1, 0});
  graph.replay(stream);
  CHECK(cuda_double::conditional_evaluations(enter.handle()) == 1);
  CHECK(cuda_double::conditional_evaluations(more.handle()) == 3);
  CHECK(first_byte(target) == 3);
}

TEST_CASE("control flow leaves nothing behind: body streams are reused, graphs are released") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> target(bytes);
  const auto capture_once = [&] {
    gc::lean_graph graph;
    graph.capture(stream, [&](auto& cap) {
      const gc::condition flag = graphcap::make_condition(cap, 1);
      graphcap::if_else(
          cap, flag,
          [&](cudaStream_t body) { CUDA_REQUIRE(cudaMemsetAsync(target.get(), 1, bytes, body)); },
          [&](cudaStream_t body) { CUDA_REQUIRE(cudaMemsetAsync(target.get(), 2, bytes, body)); });
    });
    graph.replay(stream);
  };
  capture_once(); // makes the body streams it needs
  const std::size_t streams = cuda_double::live_streams();
  const std::size_t graphs = cuda_double::live_graphs();
  const std::size_t execs = cuda_double::live_execs();
  for (int round = 0; round < 20; ++round) {
    capture_once();
  }
  CHECK(cuda_double::live_streams() == streams);
  CHECK(cuda_double::live_graphs() == graphs);
  CHECK(cuda_double::live_execs() == execs);
  CHECK(cuda_double::live_conditional_bodies() == 0);
}

// device_loop() (<graphcap/control_flow/device_loop.hpp>): its structure, with stand-ins for the
// two kernels (the double runs none): memsets on the streams the kernels would be launched on. The
// real kernels and iteration counts: test/control_flow/device_loop_kernels.gpu.cpp.
namespace {

struct stand_in_kernels {
  static inline int starts = 0;
  static inline int steps = 0;
  static inline const unsigned* trips_seen = nullptr;
  static inline unsigned n_seen = 0;

  static void start(cudaStream_t stream, const gc::loop_counter& counter, const unsigned* trips,
                    unsigned n) {
    ++starts;
    trips_seen = trips;
    n_seen = n;
    CUDA_REQUIRE(cudaMemsetAsync(counter.remaining, static_cast<int>(n), 1, stream));
  }
  static void step(cudaStream_t stream, const gc::loop_counter& counter) {
    ++steps;
    CUDA_REQUIRE(cudaMemsetAsync(counter.remaining, 0, 1, stream));
  }
  static constexpr gc::detail::device_loop_kernels kernels{&start, &step};
};

std::size_t node_count(cudaGraph_t graph) {
  std::size_t count = 0;
  CUDA_REQUIRE(cudaGraphGetNodes(graph, nullptr, &count));
  return count;
}

} // namespace

TEST_CASE("device_loop(): a start node, then a WHILE node whose body ends with the step") {
  cuda_double::reset();
  stand_in_kernels::starts = 0;
  stand_in_kernels::steps = 0;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> target(bytes);
  gc::graph graph{gc::keep_graph}; // a private pool: the counter comes from it; the template kept
  using builder = gc::detail::device_loop_builder<gc::graph::scope>;
  gc::loop_counter loop;
  cudaGraph_t body_graph = nullptr;
  graph.capture(stream, [&](gc::graph::scope& cap) {
    loop = builder::build(
        cap, builder::allocate_counter(cap), nullptr, 7,
        [&](auto& body) {
          cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
          CUDA_REQUIRE(cudaStreamGetCaptureInfo(body.stream(), &status, nullptr, &body_graph));
          CUDA_REQUIRE(cudaMemsetAsync(target.get(), 5, bytes, body.stream()));
        },
        stand_in_kernels::kernels);
  });
  CHECK(stand_in_kernels::starts == 1);
  CHECK(stand_in_kernels::steps == 1); // captured once, in the body
  CHECK(stand_in_kernels::n_seen == 7);
  CHECK(stand_in_kernels::trips_seen == nullptr);
  CHECK(graph.node_count() == 2); // the start, the WHILE node
  REQUIRE(body_graph != nullptr);
  CHECK(node_count(body_graph) == 2);                // the body's work, then the step
  CHECK(graph.pool_statistics().blocks_in_use == 1); // the counter
  CHECK(loop.remaining != nullptr);
  // A replay: the start runs first, then as many iterations as the condition allows (scripted
  // here: on a GPU the step clears it).
  cuda_double::script_conditional(loop.flag.handle(), {1, 1, 0});
  graph.replay(stream);
  stream.synchronize();
  CHECK(cuda_double::conditional_evaluations(loop.flag.handle()) == 3);
  CHECK(first_byte(target) == 5);
}

TEST_CASE("device_loop(): a device trip count, a caller's counter, and what is refused") {
  cuda_double::reset();
  stand_in_kernels::starts = 0;
  gctest::stream stream;
  gctest::device_buffer<unsigned> trips(1);
  gctest::device_buffer<unsigned> counter(1);
  gc::lean_graph graph; // no pool: the caller gives the counter
  using builder = gc::detail::device_loop_builder<gc::lean_graph::scope>;
  graph.capture(stream, [&](gc::lean_graph::scope& cap) {
    const gc::loop_counter loop = builder::build(
        cap, counter.get(), trips.get(), 0, [](cudaStream_t) {}, stand_in_kernels::kernels);
    CHECK(loop.remaining == counter.get());
  });
  CHECK(stand_in_kernels::trips_seen == trips.get());
  CHECK(graph.node_count() == 2);
  gc::lean_graph refused;
  CHECK_THROWS_WITH(refused.capture(stream,
                                    [&](gc::lean_graph::scope& cap) {
                                      builder::build(
                                          cap, nullptr, nullptr, 3, [] {},
                                          stand_in_kernels::kernels);
                                    }),
                    gctest::contains("device_loop() was given a null counter"));
  CHECK_FALSE(gctest::capturing(stream));
  CHECK_THROWS_WITH(gc::detail::trip_count(-1), gctest::contains("trip count of -1"));
  CHECK(gc::detail::trip_count(std::size_t{12}) == 12U);
}

TEST_CASE("a condition serves one conditional node: a second node is refused, a new one works") {
  // CUDA refuses a second node on one handle with a bare cudaErrorInvalidValue (the H200 and
  // the double): graphcap names the first node and says how to make another condition.
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> target(bytes);
  gc::lean_graph graph;
  auto reuse = [&](auto& cap) {
    const gc::condition more = graphcap::make_condition(cap, 1);
    graphcap::while_(cap, more, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaMemsetAsync(target.get(), 1, bytes, body));
    });
    const gc::condition copy = more; // a copy is the same condition
    graphcap::if_else(
        cap, copy,
        [&](cudaStream_t body) { CUDA_REQUIRE(cudaMemsetAsync(target.get(), 2, bytes, body)); },
        [] {});
  };
  CHECK_THROWS_AS(graph.capture(stream, reuse), gc::state_error);
  CHECK_FALSE(gctest::capturing(stream));
  CHECK_THROWS_WITH(graph.capture(stream, reuse),
                    gctest::contains("if_else() was given a condition that already serves the "
                                     "while_() node of this capture") &&
                        gctest::contains("a condition serves one conditional node") &&
                        gctest::contains("graphcap::make_condition(cap, initial)"));
  CHECK_FALSE(gctest::capturing(stream));
  // Inside a body, the same rule holds for the body's own conditions.
  CHECK_THROWS_WITH(graph.capture(stream,
                                  [&](auto& cap) {
                                    const gc::condition enter = graphcap::make_condition(cap, 1);
                                    graphcap::if_(cap, enter, [&](auto& outer) {
                                      const gc::condition inner =
                                          graphcap::make_condition(outer, 0);
                                      graphcap::if_(outer, inner, [] {});
                                      graphcap::while_(outer, inner, [] {});
                                    });
                                  }),
                    gctest::contains("while_() was given a condition that already serves the "
                                     "if_() node of this capture"));
  CHECK_FALSE(gctest::capturing(stream));
  // What the message says to do: one condition per node. The graph captures and replays.
  gc::condition more;
  gc::condition taken;
  graph.capture(stream, [&](auto& cap) {
    more = graphcap::make_condition(cap, 1);
    graphcap::while_(cap, more, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaMemsetAsync(target.get(), 1, bytes, body));
    });
    taken = graphcap::make_condition(cap, 0);
    graphcap::if_else(
        cap, taken,
        [&](cudaStream_t body) { CUDA_REQUIRE(cudaMemsetAsync(target.get(), 2, bytes, body)); },
        [&](cudaStream_t body) { CUDA_REQUIRE(cudaMemsetAsync(target.get(), 3, bytes, body)); });
  });
  cuda_double::script_conditional(more.handle(), {1, 0});
  graph.replay(stream);
  CHECK(first_byte(target) == 3);
  // A new capture makes new conditions: the last capture's uses do not count in it.
  graph.reset();
  graph.capture(stream, [&](auto& cap) {
    more = graphcap::make_condition(cap, 0);
    graphcap::while_(cap, more, [] {});
  });
  graph.replay(stream);
}

TEST_CASE("condition(initial): a value an unsigned condition cannot hold is refused, by name") {
  // A negative int converted to unsigned with only a sign-conversion warning: 4294967295.
  cuda_double::reset();
  gctest::stream stream;
  gc::lean_graph graph;
  CHECK_THROWS_AS(
      graph.capture(stream,
                    [](auto& cap) { static_cast<void>(graphcap::make_condition(cap, -1)); }),
      std::invalid_argument);
  CHECK_FALSE(gctest::capturing(stream));
  CHECK_THROWS_WITH(
      graph.capture(stream,
                    [](auto& cap) { static_cast<void>(graphcap::make_condition(cap, -1)); }),
      gctest::contains("condition() was given the initial value -1"));
  CHECK_THROWS_WITH(graph.capture(stream,
                                  [](auto& cap) {
                                    static_cast<void>(
                                        graphcap::make_condition(cap, std::int64_t{1} << 32));
                                  }),
                    gctest::contains("initial value 4294967296"));
  CHECK(graph.empty());
  gc::condition flag; // what fits is taken: int, bool, a large unsigned
  graph.capture(stream, [&](auto& cap) {
    flag = graphcap::make_condition(cap, true);
    graphcap::if_(cap, flag, [] {});
    graphcap::while_(cap, graphcap::make_condition(cap, 4294967295U), [] {});
    flag = graphcap::make_condition(cap, std::size_t{2});
    graphcap::switch_(
        cap, flag, [] {}, [] {}, [] {});
  });
}

// The member spellings are deprecated in 0.5 and kept one release: each forwards to the free
// function (by argument-dependent lookup), so old code captures the same graph.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
TEST_CASE("the deprecated member spellings forward to the free functions") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> target(bytes);
  gc::lean_graph graph;
  gc::condition more;
  gc::condition branch;
  graph.capture(stream, [&](auto& cap) {
    more = cap.condition(1);
    cap.while_(more, [&](auto& body) {
      branch = body.condition(1);
      body.if_(branch,
               [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(target.get(), 7, bytes, s)); });
    });
  });
  cuda_double::script_conditional(more.handle(), {1, 1, 0});
  graph.replay(stream);
  CHECK(cuda_double::conditional_evaluations(more.handle()) == 3);
  CHECK(first_byte(target) == 7);
  static_assert(std::is_same_v<gc::lean_graph::body_scope, gc::body_scope<gc::lean_graph>>);
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
