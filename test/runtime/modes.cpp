// Runtime tests: the three capture modes against a second thread, and the thread-safety
// contract (docs/threads.md).
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace gc = graphcap;

namespace {

void CUDART_CB add_one(void* counter) {
  ++*static_cast<std::atomic<int>*>(counter);
}

/// Runs `other_thread` on a second thread while `Graph` captures, and returns what
/// cudaMalloc returned there. The capture itself then ends (or fails) normally.
template <class Graph>
cudaError_t malloc_from_other_thread_during_capture(Graph& graph, cudaStream_t stream) {
  cudaError_t seen = cudaSuccess;
  auto cap = graph.begin_capture(stream);
  std::thread other([&] {
    void* memory = nullptr;
    seen = cudaMalloc(&memory, 256);
    if (seen == cudaSuccess) {
      static_cast<void>(cudaFree(memory));
    }
    static_cast<void>(cudaGetLastError());
  });
  other.join();
  try {
    cap.end();
  } catch (const gc::capture_error&) {
    // global mode: the other thread's cudaMalloc invalidated the capture
  }
  return seen;
}

} // namespace

TEST_CASE("mode::global: another thread's cudaMalloc during the capture fails") {
  gctest::stream stream;
  gc::graph_with<gc::mode::global> graph;
  CHECK(malloc_from_other_thread_during_capture(graph, stream) ==
        cudaErrorStreamCaptureUnsupported);
  CHECK_FALSE(gctest::capturing(stream));
}

TEST_CASE("mode::thread_local_: another thread's cudaMalloc during the capture succeeds") {
  gctest::stream stream;
  gc::graph_with<gc::mode::thread_local_> graph;
  CHECK(malloc_from_other_thread_during_capture(graph, stream) == cudaSuccess);
  CHECK(graph.state() == gc::graph_state::instantiated);
}

TEST_CASE("mode::relaxed: the capturing thread's own cudaMalloc succeeds") {
  gctest::stream stream;
  gc::graph_with<gc::mode::relaxed> graph;
  void* memory = nullptr;
  graph.capture(stream, [&] { CUDA_REQUIRE(cudaMalloc(&memory, 256)); });
  CHECK(graph.state() == gc::graph_state::instantiated);
  CUDA_REQUIRE(cudaFree(memory));
}

TEST_CASE("mode::thread_local_: the capturing thread's own cudaMalloc still fails") {
  gctest::stream stream;
  gc::graph_with<gc::mode::thread_local_> graph;
  CHECK_THROWS_AS(graph.capture(stream,
                                [&] {
                                  void* memory = nullptr;
                                  CHECK(cudaMalloc(&memory, 256) ==
                                        cudaErrorStreamCaptureUnsupported);
                                  static_cast<void>(cudaGetLastError());
                                }),
                  gc::capture_error);
}

TEST_CASE("destroying graph A while another thread captures B in global mode is safe") {
  gctest::stream stream_a;
  gctest::stream stream_b;
  std::atomic<int> counter{0};
  auto graph_a = std::make_unique<gc::lean_graph>();
  graph_a->capture(stream_a,
                   [&](cudaStream_t s) { CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &counter)); });
  graph_a->replay(stream_a);
  stream_a.synchronize();

  gc::lean_graph graph_b; // mode::global
  auto cap = graph_b.begin_capture(stream_b);
  CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), add_one, &counter));
  std::thread destroyer([&] { graph_a.reset(); }); // cudaGraphExecDestroy during B's capture
  destroyer.join();
  REQUIRE_NOTHROW(cap.end()); // graphcap tore A down relaxed: B's capture was not invalidated
  graph_b.replay(stream_b);
  stream_b.synchronize();
  CHECK(counter == 2);
}

TEST_CASE("different graphs capture and replay on different threads at once (thread_local_)") {
  constexpr int threads = 4;
  constexpr int replays = 50;
  std::vector<std::atomic<int>> counters(threads);
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        cudaStream_t stream = nullptr;
        if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
          ++failures;
          return;
        }
        gc::graph_with<gc::mode::thread_local_> graph;
        graph.capture(stream, [&](cudaStream_t s) {
          if (cudaLaunchHostFunc(s, add_one, &counters[static_cast<std::size_t>(t)]) !=
              cudaSuccess) {
            ++failures;
          }
        });
        for (int i = 0; i < replays; ++i) {
          graph.replay(stream);
        }
        if (cudaStreamSynchronize(stream) != cudaSuccess) {
          ++failures;
        }
        static_cast<void>(cudaStreamDestroy(stream));
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& worker : workers) {
    worker.join();
  }
  CHECK(failures == 0);
  for (auto& counter : counters) {
    CHECK(counter == replays);
  }
}
