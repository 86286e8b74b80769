// Conditional nodes captured with <graphcap/control_flow.hpp>, on work the host can execute
// (memsets and copies in the bodies), on both backends. Conditions here take their value from
// condition()'s initial value at each launch; device code that sets them is in
// test/control_flow/control_flow_kernels.gpu.cpp, scripted values on the double in
// test/control_flow/control_flow.double.cpp.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/library_stream.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <utility>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 256;

/// A byte buffer of device memory whose first byte the tests read back.
class marks {
public:
  marks() { CUDA_REQUIRE(cudaMemset(buffer_.get(), 0, buffer_.bytes())); }
  [[nodiscard]] unsigned char* at(std::size_t slot) const { return buffer_.get() + slot * bytes; }
  [[nodiscard]] int read(std::size_t slot) const {
    unsigned char value = 0;
    CUDA_REQUIRE(cudaMemcpy(&value, at(slot), 1, cudaMemcpyDeviceToHost));
    return value;
  }
  void clear() const { CUDA_REQUIRE(cudaMemset(buffer_.get(), 0, buffer_.bytes())); }

private:
  gctest::device_buffer<unsigned char> buffer_{4 * bytes};
};

void mark(cudaStream_t stream, const marks& target, std::size_t slot, int value) {
  CUDA_REQUIRE(cudaMemsetAsync(target.at(slot), value, bytes, stream));
}

template <class Graph>
void replay_and_wait(Graph& graph, const gctest::stream& stream) {
  graph.replay(stream);
  stream.synchronize();
}

} // namespace

TEST_CASE("if_: the body runs when the condition is non-zero at launch, not otherwise") {
  gctest::stream stream;
  const marks target;
  for (const unsigned value : {1U, 0U}) {
    gc::lean_graph graph;
    graph.capture(stream, [&](auto& cap) {
      const gc::condition taken = graphcap::make_condition(cap, value);
      mark(cap.stream(), target, 0, 7);
      graphcap::if_(cap, taken, [&](cudaStream_t body) { mark(body, target, 1, 8); });
      mark(cap.stream(), target, 2, 9); // after the node: ordered after the body
    });
    CHECK(graph.node_count() == 3); // memset, the conditional node, memset
    target.clear();
    replay_and_wait(graph, stream);
    CHECK(target.read(0) == 7);
    CHECK(target.read(1) == (value != 0 ? 8 : 0));
    CHECK(target.read(2) == 9);
  }
}

TEST_CASE("if_else and switch_: one body runs, chosen by the condition's value") {
  gctest::stream stream;
  const marks target;
  for (const unsigned value : {0U, 1U}) {
    gc::lean_graph graph;
    graph.capture(stream, [&](auto& cap) {
      const gc::condition flag = graphcap::make_condition(cap, value);
      graphcap::if_else(
          cap, flag, [&](cudaStream_t body) { mark(body, target, 0, 1); },
          [&](cudaStream_t body) { mark(body, target, 1, 2); });
    });
    target.clear();
    replay_and_wait(graph, stream);
    CHECK(target.read(0) == (value != 0 ? 1 : 0));
    CHECK(target.read(1) == (value != 0 ? 0 : 2));
  }
  for (const unsigned value : {0U, 1U, 2U, 3U}) {
    gc::lean_graph graph;
    graph.capture(stream, [&](auto& cap) {
      const gc::condition which = graphcap::make_condition(cap, value);
      graphcap::switch_(
          cap, which, [&](cudaStream_t body) { mark(body, target, 0, 10); },
          [&](cudaStream_t body) { mark(body, target, 1, 11); },
          [&](cudaStream_t body) { mark(body, target, 2, 12); });
    });
    target.clear();
    replay_and_wait(graph, stream);
    INFO("switch value " << value);
    CHECK(target.read(0) == (value == 0 ? 10 : 0));
    CHECK(target.read(1) == (value == 1 ? 11 : 0));
    CHECK(target.read(2) == (value == 2 ? 12 : 0)); // 3: no body
  }
}

TEST_CASE("conditionals nest, and a body's scope offers what the parent's does") {
  gctest::stream stream;
  const marks target;
  gc::graph graph; // a private pool: allocate() in the bodies
  graph.capture(stream, [&](gc::graph::scope& cap) {
    const gc::condition outer = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, outer, [&](auto& body) {
      auto* temporary = body.template allocate<unsigned char>(bytes); // fixed address
      CUDA_REQUIRE(cudaMemsetAsync(temporary, 5, bytes, body.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(target.at(0), temporary, bytes, cudaMemcpyDeviceToDevice, body.stream()));
      const gc::condition inner = graphcap::make_condition(body, 1); // owned by the body graph
      graphcap::if_(body, inner, [&](cudaStream_t nested) { mark(nested, target, 1, 6); });
    });
  });
  replay_and_wait(graph, stream);
  CHECK(target.read(0) == 5);
  CHECK(target.read(1) == 6);
  CHECK(graph.pool_statistics().blocks_in_use == 1);
}

TEST_CASE("pool blocks freed in a body are reused by the next body and by later parent work") {
  gctest::stream stream;
  const marks target;
  gc::graph graph; // a private pool
  unsigned char* in_first = nullptr;
  unsigned char* in_second = nullptr;
  unsigned char* in_nested = nullptr;
  unsigned char* after = nullptr;
  unsigned char* from_parent = nullptr;
  unsigned char* parent_block = nullptr;
  constexpr std::size_t big = 8 * bytes; // another size class
  graph.capture(stream, [&](gc::graph::scope& cap) {
    const gc::condition flag = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, flag, [&](auto& body) {
      in_first = body.template allocate<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(in_first, 1, bytes, body.stream()));
      const gc::condition inner = graphcap::make_condition(body, 1);
      graphcap::if_(body, inner, [&](auto& nested) {
        in_nested = nested.template allocate<unsigned char>(bytes); // in_first is still in use
        CUDA_REQUIRE(cudaMemsetAsync(in_nested, 2, bytes, nested.stream()));
        nested.deallocate(in_nested);
      });
      body.deallocate(in_first);
    });
    const gc::condition again = graphcap::make_condition(cap, 1);
    graphcap::while_(cap, again,
                     [&](auto& body) { // the node runs after the first: its blocks are free
                       in_second = body.template allocate<unsigned char>(bytes);
                       CUDA_REQUIRE(cudaMemcpyAsync(target.at(0), in_second, 1,
                                                    cudaMemcpyDeviceToDevice, body.stream()));
                       body.deallocate(in_second);
                     });
    after = cap.template allocate<unsigned char>(bytes); // after both nodes, on the parent stream
    parent_block = cap.template allocate<unsigned char>(big);
    CUDA_REQUIRE(cudaMemsetAsync(parent_block, 3, big, cap.stream()));
    cap.deallocate(parent_block); // freed by the parent before the next node
    const gc::condition last = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, last, [&](auto& body) {
      from_parent = body.template allocate<unsigned char>(big);
      CUDA_REQUIRE(cudaMemsetAsync(from_parent, 4, big, body.stream()));
    });
  });
  REQUIRE(in_first != nullptr);
  CHECK(in_nested != in_first); // both live at once
  CHECK(in_second == in_first); // the last freed of its size class, handed on by the first node
  CHECK(after == in_second);    // the parent reuses what the bodies freed
  CHECK(from_parent == parent_block); // a body reuses what the parent freed before its node
  CHECK(graph.pool_statistics().blocks_in_use == 3); // two small blocks, one big
}

TEST_CASE("work forked to another stream inside a body and joined back is part of the body") {
  gctest::stream stream;
  gctest::stream side;
  gctest::event forked;
  gctest::event joined;
  const marks target;
  gc::lean_graph graph;
  graph.capture(stream, [&](auto& cap) {
    const gc::condition flag = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, flag, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaEventRecord(forked, body));
      CUDA_REQUIRE(cudaStreamWaitEvent(side, forked, 0));
      mark(side, target, 0, 3);
      CUDA_REQUIRE(cudaEventRecord(joined, side));
      CUDA_REQUIRE(cudaStreamWaitEvent(body, joined, 0));
      mark(body, target, 1, 4);
    });
  });
  replay_and_wait(graph, stream);
  CHECK(target.read(0) == 3);
  CHECK(target.read(1) == 4);
}

TEST_CASE("a node a body may not hold ends the capture with a capture_error naming it") {
  gctest::stream stream;
  const marks target;
  gc::lean_graph graph;
  gctest::event timing;
  const auto capture_with_body = [&](auto body_work) {
    graph.capture(stream, [&](auto& cap) {
      const gc::condition flag = graphcap::make_condition(cap, 1);
      mark(cap.stream(), target, 0, 1);
      graphcap::while_(cap, flag, body_work);
    });
  };
  SECTION("an event record node") {
    CHECK_THROWS_WITH(capture_with_body([&](cudaStream_t body) {
                        CUDA_REQUIRE(
                            cudaEventRecordWithFlags(timing, body, cudaEventRecordExternal));
                      }),
                      gctest::contains("body 0 of while_() holds an event_record node"));
  }
  SECTION("a graph memory node (cudaMallocAsync in the body)") {
    CHECK_THROWS_WITH(capture_with_body([&](cudaStream_t body) {
                        void* block = nullptr;
                        CUDA_REQUIRE(cudaMallocAsync(&block, bytes, body));
                        CUDA_REQUIRE(cudaFreeAsync(block, body));
                      }),
                      gctest::contains("holds a mem_alloc node") &&
                          gctest::contains("allocate from a slab pool"));
  }
  REQUIRE(graph.empty());
  REQUIRE_FALSE(gctest::capturing(stream));
  graph.capture(stream, [&](cudaStream_t s) { mark(s, target, 2, 2); }); // still usable
  replay_and_wait(graph, stream);
  CHECK(target.read(2) == 2);
  gctest::require_no_last_error();
}

TEST_CASE("a condition used by a node of another graph is a state_error naming both") {
  gctest::stream stream;
  gctest::stream other_stream;
  gc::lean_graph first;
  gc::lean_graph second;
  gc::condition foreign;
  first.capture(stream, [&](auto& cap) {
    foreign = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, foreign, [](cudaStream_t) {}); // used: CUDA instantiates no unused condition
  });
  CHECK_THROWS_AS(
      second.capture(other_stream,
                     [&](auto& cap) { graphcap::if_(cap, foreign, [](cudaStream_t) {}); }),
      gc::state_error);
  CHECK_THROWS_WITH(
      second.capture(other_stream,
                     [&](auto& cap) { graphcap::if_(cap, foreign, [](cudaStream_t) {}); }),
      gctest::contains("does not belong to the graph it captures into") &&
          gctest::contains("create the condition with graphcap::make_condition() on the scope"));
  CHECK(second.empty());
  CHECK_FALSE(gctest::capturing(other_stream));
}

TEST_CASE("a body that throws discards the whole capture and leaves no stream capturing") {
  gctest::stream stream;
  gc::graph graph;
  CHECK_THROWS_WITH(graph.capture(stream,
                                  [&](auto& cap) {
                                    const gc::condition flag = graphcap::make_condition(cap, 1);
                                    graphcap::if_(cap, flag, [](auto& body) {
                                      static_cast<void>(body.template allocate<float>(64));
                                      throw std::runtime_error("the body failed");
                                    });
                                  }),
                    gctest::contains("the body failed"));
  CHECK(graph.empty());
  CHECK_FALSE(gctest::capturing(stream));
  gctest::require_no_last_error();
}

TEST_CASE("recapture with the same control flow updates the executable graph in place") {
  gctest::stream stream;
  const marks target;
  gc::lean_graph graph;
  const auto step = [&](int value) {
    return [&target, value](auto& cap) {
      const gc::condition flag = graphcap::make_condition(cap, 1);
      graphcap::if_(cap, flag,
                    [&target, value](cudaStream_t body) { mark(body, target, 0, value); });
    };
  };
  graph.capture(stream, step(1));
  replay_and_wait(graph, stream);
  CHECK(target.read(0) == 1);
  const gc::update_result result = graph.recapture(stream, step(2));
  CHECK(result.updated());
  replay_and_wait(graph, stream);
  CHECK(target.read(0) == 2);
}

TEST_CASE("a condition no conditional node uses: the instantiation error says so") {
  gctest::stream stream;
  gc::lean_graph graph;
  CHECK_THROWS_WITH(
      graph.capture(stream,
                    [&](auto& cap) { static_cast<void>(graphcap::make_condition(cap, 1)); }),
      gctest::contains("no conditional node uses"));
  // CUDA's own reason, asked of cudaGraphInstantiateWithParams after the failure.
  CHECK_THROWS_WITH(
      graph.capture(stream,
                    [&](auto& cap) { static_cast<void>(graphcap::make_condition(cap, 1)); }),
      gctest::contains("(cudaGraphInstantiateConditionalHandleUnused)"));
  CHECK(graph.empty());
  CHECK_FALSE(gctest::capturing(stream));
}

TEST_CASE("liveness::check sees the inputs a conditional body reads") {
  gctest::stream stream;
  void* input = nullptr;
  CUDA_REQUIRE(cudaMalloc(&input, bytes));
  const gctest::device_buffer<unsigned char> output(bytes);
  gc::graph_with<gc::liveness::check> graph;
  graph.capture(stream, [&](auto& cap) {
    const gc::condition flag = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, flag, [&](cudaStream_t body) {
      CUDA_REQUIRE(cudaMemcpyAsync(output.get(), input, bytes, cudaMemcpyDeviceToDevice, body));
    });
  });
  CHECK(graph.liveness_policy().input_count() == 2); // the body's source and destination
  replay_and_wait(graph, stream);
  CUDA_REQUIRE(cudaFree(input));
  CHECK_THROWS_WITH(graph.replay(stream), gctest::contains("memcpy source"));
  stream.synchronize();
}

namespace {
/// One step for a capture, a recapture and a conditional body: a template over any capture scope,
/// allocating through the free functions (generic code needs no `.template`).
template <gc::capture_scope Scope>
void step_anywhere(Scope& cap, const marks& target, std::size_t slot, int value) {
  unsigned char* scratch = gc::allocate<unsigned char>(cap, bytes);
  CUDA_REQUIRE(cudaMemsetAsync(scratch, value, bytes, cap.stream()));
  CUDA_REQUIRE(
      cudaMemcpyAsync(target.at(slot), scratch, bytes, cudaMemcpyDeviceToDevice, cap.stream()));
}
} // namespace

TEST_CASE("one step function serves a capture, a recapture and a conditional body") {
  static_assert(gc::capture_scope<gc::body_scope<gc::graph>>);
  gctest::stream stream;
  const marks target;
  gc::graph graph{gc::keep_graph};
  const auto work = [&](int value) {
    return [&, value](auto& cap) {
      step_anywhere(cap, target, 0, value);
      graphcap::if_(cap, graphcap::make_condition(cap, 1),
                    [&](auto& body) { step_anywhere(body, target, 1, value + 1); });
    };
  };
  graph.capture(stream, work(3));
  graph.replay(stream);
  stream.synchronize();
  CHECK(target.read(0) == 3);
  CHECK(target.read(1) == 4);
  const gc::update_result result = graph.recapture(stream, work(5));
  CHECK(result.updated());
  graph.replay(stream);
  stream.synchronize();
  CHECK(target.read(0) == 5);
  CHECK(target.read(1) == 6);
}

namespace {
/// A library handle as cuBLAS and cuSPARSE have them: a stream it sends its work to.
struct fake_library {
  cudaStream_t stream = nullptr;
  int refuse_set = 0; // non-zero: the next set returns it
};
using fake_handle = fake_library*;
int fake_get_stream(fake_handle handle, cudaStream_t* stream) {
  *stream = handle->stream;
  return 0;
}
int fake_set_stream(fake_handle handle, cudaStream_t stream) {
  if (handle->refuse_set != 0) {
    return std::exchange(handle->refuse_set, 0);
  }
  handle->stream = stream;
  return 0;
}
} // namespace

TEST_CASE("scoped_library_stream points a handle at a body's stream, and back after the body") {
  gctest::stream stream;
  gctest::stream library_stream;
  fake_library library{library_stream, 0};
  gc::lean_graph graph;
  cudaStream_t seen_in_body = nullptr;
  graph.capture(stream, [&](auto& cap) {
    graphcap::if_(cap, graphcap::make_condition(cap, 1), [&](auto& body) {
      const gc::scoped_library_stream guard{&library, body.stream(), fake_get_stream,
                                            fake_set_stream};
      seen_in_body = library.stream;
      CHECK(guard.previous() == static_cast<cudaStream_t>(library_stream));
    });
  });
  CHECK(seen_in_body != nullptr);
  CHECK(seen_in_body != static_cast<cudaStream_t>(library_stream)); // the body's own stream
  CHECK(library.stream == static_cast<cudaStream_t>(library_stream));
  // A library that refuses: graphcap::error, the handle unchanged, the capture discarded.
  library.refuse_set = 7;
  graph.reset();
  CHECK_THROWS_WITH(
      graph.capture(stream,
                    [&](auto& cap) {
                      graphcap::if_(cap, graphcap::make_condition(cap, 1), [&](auto& body) {
                        const gc::scoped_library_stream guard{&library, body.stream(),
                                                              fake_get_stream, fake_set_stream};
                      });
                    }),
      gctest::contains("returned status 7"));
  CHECK(library.stream == static_cast<cudaStream_t>(library_stream));
  CHECK_FALSE(gctest::capturing(stream));
}
