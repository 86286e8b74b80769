// How conditional bodies fail, on both backends: work forked from a body and never joined back,
// a body whose capture CUDA invalidated, capture-unsafe calls inside a body, a user exception in
// a nested body. CUDA destroys the graph a capture was into when that capture fails to end, a
// body graph too, and the H200 then crashes when the parent graph goes (the reliability issue,
// benchmark/probes/body_abandon.cu): every case here must end with a typed error (or the user's
// exception), no stream capturing, and a graph that captures and replays again.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 256;

struct user_exception {};

/// The streams and buffer of one case.
struct setting {
  gctest::stream stream;
  gctest::stream side;
  gctest::device_buffer<unsigned char> target{bytes};
  cudaEvent_t fork = nullptr;
  cudaEvent_t join = nullptr;

  setting() {
    CUDA_REQUIRE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CUDA_REQUIRE(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  }
  ~setting() {
    static_cast<void>(cudaEventDestroy(fork));
    static_cast<void>(cudaEventDestroy(join));
  }
  setting(const setting&) = delete;
  setting& operator=(const setting&) = delete;
  setting(setting&&) = delete;
  setting& operator=(setting&&) = delete;

  /// Forks from `body` to the side stream and issues work there, never joined back.
  void fork_unjoined(cudaStream_t body) const {
    CUDA_REQUIRE(cudaEventRecord(fork, body));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, fork, 0));
    CUDA_REQUIRE(cudaMemsetAsync(target.get(), 2, bytes, side));
  }
};

/// After a failed capture: nothing captures, and the graph captures and replays again.
template <class Graph>
void require_recovered(Graph& graph, const setting& at) {
  CHECK(graph.empty());
  CHECK_FALSE(gctest::capturing(at.stream));
  CHECK_FALSE(gctest::capturing(at.side));
  gctest::require_no_last_error();
  graph.capture(at.stream, [&](auto& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(at.target.get(), 7, bytes, cap.stream()));
  });
  CUDA_REQUIRE(cudaMemsetAsync(at.target.get(), 0, bytes, at.stream)); // ordered before the replay
  graph.replay(at.stream);
  at.stream.synchronize();
  unsigned char value = 0;
  CUDA_REQUIRE(cudaMemcpy(&value, at.target.get(), 1, cudaMemcpyDeviceToHost));
  CHECK(value == 7);
}

} // namespace

TEST_CASE("nested bodies: a fork never joined, then a user exception, leave nothing capturing") {
  setting at;
  gc::graph graph;
  CHECK_THROWS_AS(
      graph.capture(at.stream,
                    [&](auto& cap) {
                      CUDA_REQUIRE(cudaMemsetAsync(at.target.get(), 1, bytes, cap.stream()));
                      graphcap::if_(cap, graphcap::make_condition(cap, 1), [&](auto& body) {
                        unsigned char* block = body.template allocate<unsigned char>(16);
                        CUDA_REQUIRE(cudaMemsetAsync(block, 3, 16, body.stream()));
                        graphcap::while_(body, graphcap::make_condition(body, 0), [&](auto& inner) {
                          at.fork_unjoined(inner.stream());
                          throw user_exception{};
                        });
                      });
                    }),
      user_exception);
  require_recovered(graph, at);
}

TEST_CASE("a body that returns with forked work unjoined is a capture_error naming it") {
  setting at;
  gc::lean_graph graph;
  try {
    graph.capture(at.stream, [&](auto& cap) {
      graphcap::while_(cap, graphcap::make_condition(cap, 0),
                       [&](auto& body) { at.fork_unjoined(body.stream()); });
    });
    FAIL("the capture succeeded");
  } catch (const gc::capture_error& failure) {
    CHECK(failure.code() == cudaErrorStreamCaptureUnjoined);
    CHECK_THAT(failure.what(), gctest::contains("body 0 of while_()"));
    CHECK_THAT(failure.what(), gctest::contains("not joined back"));
  }
  require_recovered(graph, at);
}

TEST_CASE("a body whose capture was invalidated is a capture_error, and CUDA keeps the tree") {
  setting at;
  gc::graph graph;
  try {
    graph.capture(at.stream, [&](auto& cap) {
      graphcap::if_(cap, graphcap::make_condition(cap, 1), [&](auto& body) {
        CUDA_REQUIRE(cudaMemsetAsync(at.target.get(), 1, bytes, body.stream()));
        CHECK(cudaStreamSynchronize(body.stream()) != cudaSuccess); // refused: invalidates
        static_cast<void>(cudaGetLastError());
      });
    });
    FAIL("the capture succeeded");
  } catch (const gc::capture_error& failure) {
    CHECK(failure.code() == cudaErrorStreamCaptureInvalidated);
    CHECK_THAT(failure.what(), gctest::contains("body 0 of if_()"));
  }
  require_recovered(graph, at);
}

TEST_CASE("an invalidated body with an unjoined fork, three levels deep, then a throw") {
  setting at;
  gc::graph graph;
  CHECK_THROWS_AS(
      graph.capture(at.stream,
                    [&](auto& cap) {
                      graphcap::if_(cap, graphcap::make_condition(cap, 1), [&](auto& body) {
                        graphcap::while_(body, graphcap::make_condition(body, 0), [&](auto& inner) {
                          at.fork_unjoined(inner.stream());
                          CHECK(cudaStreamSynchronize(inner.stream()) != cudaSuccess);
                          static_cast<void>(cudaGetLastError());
                          throw user_exception{};
                        });
                      });
                    }),
      user_exception);
  // CUDA destroyed the WHILE body when its capture ended; graphcap ended the outermost capture
  // with it and keeps that graph (destroying it would crash). The side stream was released.
  require_recovered(graph, at);
}

TEST_CASE("a capture-unsafe call in a body invalidates the parent capture, not the body's") {
  setting at;
  for (const bool device_wide : {false, true}) {
    INFO((device_wide ? "cudaDeviceSynchronize" : "cudaMalloc"));
    gc::graph graph;
    try {
      graph.capture(at.stream, [&](auto& cap) {
        graphcap::while_(cap, graphcap::make_condition(cap, 0), [&](auto& body) {
          CUDA_REQUIRE(cudaMemsetAsync(at.target.get(), 1, bytes, body.stream()));
          void* memory = nullptr;
          CHECK((device_wide ? cudaDeviceSynchronize() : cudaMalloc(&memory, 64)) ==
                cudaErrorStreamCaptureUnsupported);
          static_cast<void>(cudaGetLastError());
        });
      });
      FAIL("the capture succeeded");
    } catch (const gc::capture_error& failure) {
      CHECK(failure.code() == cudaErrorStreamCaptureInvalidated);
    }
    require_recovered(graph, at);
  }
}

TEST_CASE("a negative or overflowing count in a body is refused like the parent's") {
  setting at;
  gc::graph graph;
  const auto refused = [&](auto request, const char* expected) {
    CHECK_THROWS_WITH(graph.capture(at.stream,
                                    [&](auto& cap) {
                                      graphcap::if_(cap, graphcap::make_condition(cap, 1),
                                                    [&](auto& body) { request(body); });
                                    }),
                      gctest::contains(expected));
    CHECK(graph.pool_statistics().blocks_in_use == 0);
    require_recovered(graph, at);
    graph.reset();
  };
  refused([](auto& body) { static_cast<void>(body.template allocate<std::byte>(-1)); },
          "allocate<std::byte>() was given a count of -1, which is negative");
  refused(
      [](auto& body) {
        static_cast<void>(body.template make_buffer<int>(static_cast<std::size_t>(-1)));
      },
      "make_buffer<int>() was given a count of 18446744073709551615");
}

TEST_CASE("a body copying to pageable host memory is refused at capture, naming the rule") {
  setting at;
  gc::graph graph;
  std::vector<unsigned char> pageable(bytes, 0); // what cuda-samples' CG iteration copies to
  try {
    graph.capture(at.stream, [&](auto& cap) {
      graphcap::while_(cap, graphcap::make_condition(cap, 0), [&](auto& body) {
        CUDA_REQUIRE(cudaMemcpyAsync(pageable.data(), at.target.get(), 4, cudaMemcpyDeviceToHost,
                                     body.stream()));
      });
    });
    FAIL("the capture succeeded");
  } catch (const gc::capture_error& failure) {
    CHECK_THAT(failure.what(), gctest::contains("body 0 of while_() holds a memcpy node whose "
                                                "destination is pageable host memory"));
    CHECK_THAT(failure.what(), gctest::contains("pinned host memory only"));
  }
  require_recovered(graph, at);
  // Pinned host memory is allowed.
  gctest::pinned_buffer<unsigned char> pinned(bytes);
  graph.reset();
  graph.capture(at.stream, [&](auto& cap) {
    graphcap::if_(cap, graphcap::make_condition(cap, 1), [&](auto& body) {
      CUDA_REQUIRE(
          cudaMemcpyAsync(pinned.get(), at.target.get(), 4, cudaMemcpyDeviceToHost, body.stream()));
    });
  });
  graph.replay(at.stream);
  at.stream.synchronize();
}
