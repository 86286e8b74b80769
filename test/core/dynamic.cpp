// Runtime tests: recapture with in-place update, and the graph cache. CUDA work the host can
// execute (memsets, copies, host functions), so that they run on the test double and the GPU.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;

std::vector<unsigned char> filled(int value, std::size_t size = bytes) {
  return std::vector<unsigned char>(size, static_cast<unsigned char>(value));
}

void CUDART_CB count_call(void* counter) {
  ++*static_cast<int*>(counter);
}

/// What most tests here capture into: a stream, a device buffer, and the host copy of it that
/// gctest::fill_and_copy makes.
struct fill_fixture {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device{bytes};
  std::vector<unsigned char> host = std::vector<unsigned char>(bytes, 0);

  /// The work that fills `host` with `value`: two nodes.
  auto fill(int value) {
    return [this, value](cudaStream_t s) { gctest::fill_and_copy(s, device, host, value); };
  }
};

} // namespace

TEST_CASE_METHOD(
    fill_fixture,
    "recapture updates in place when only parameters change, and replays follow them") {
  gc::lean_graph graph;
  graph.capture(stream, fill(1));
  const cudaGraphExec_t before = graph.raw_exec();
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(1));

  const gc::update_result result = graph.recapture(stream, fill(2));
  CHECK(result.updated());
  CHECK(result.outcome == gc::update_outcome::updated);
  CHECK(result.reason.empty());
  CHECK(graph.raw_exec() == before); // the same executable graph, changed in place
  CHECK(graph.state() == gc::graph_state::instantiated);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(2));
}

TEST_CASE_METHOD(fill_fixture,
                 "recapture falls back to instantiation when the topology changes, and says why") {
  int calls = 0;
  gc::lean_graph graph;
  graph.capture(stream, fill(3));
  const gc::update_result result = graph.recapture(stream, [&](cudaStream_t s) {
    gctest::fill_and_copy(s, device, host, 4);
    CUDA_REQUIRE(cudaLaunchHostFunc(s, count_call, &calls)); // one node more
  });
  CHECK_FALSE(result.updated());
  CHECK(result.outcome == gc::update_outcome::reinstantiated);
  CHECK(result.cuda_result == cudaGraphExecUpdateErrorTopologyChanged);
  CHECK_THAT(std::string(result.reason), gctest::contains("topology"));
  CHECK(graph.node_count() == 3);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(4));
  CHECK(calls == 1);
}

TEST_CASE_METHOD(fill_fixture,
                 "recapture of an empty graph instantiates, and says there was nothing to update") {
  gc::lean_graph graph;
  const gc::update_result result = graph.recapture(stream, fill(5));
  CHECK(result.outcome == gc::update_outcome::instantiated);
  CHECK(gc::to_string(result.outcome) == "instantiated");
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(5));
}

TEST_CASE_METHOD(fill_fixture,
                 "take_executable hands one executable between two captures of one topology") {
  gc::lean_graph first{gc::keep_graph};
  gc::lean_graph second{gc::keep_graph};
  first.capture(stream, fill(6));
  second.capture(stream, fill(7));
  first.instantiate();
  const cudaGraphExec_t shared = first.raw_exec();

  const gc::update_result taken = second.take_executable(first);
  CHECK(taken.updated());
  CHECK(second.raw_exec() == shared); // the same executable graph, updated in place
  CHECK(second.state() == gc::graph_state::instantiated);
  CHECK(first.state() == gc::graph_state::captured); // its template, no executable
  CHECK_THROWS_AS(first.raw_exec(), gc::state_error);
  second.replay(stream);
  stream.synchronize();
  CHECK(host == filled(7));

  CHECK(first.take_executable(second).updated()); // and back
  CHECK(first.raw_exec() == shared);
  first.replay(stream);
  stream.synchronize();
  CHECK(host == filled(6));
  second.replay(stream); // without an executable: instantiated anew from its template
  stream.synchronize();
  CHECK(host == filled(7));
  CHECK(second.raw_exec() != shared);
}

TEST_CASE_METHOD(fill_fixture, "take_executable: a refused update changes nothing, and misuse is "
                               "a state_error") {
  int calls = 0;
  gc::lean_graph first{gc::keep_graph};
  gc::lean_graph other{gc::keep_graph};
  first.capture(stream, fill(8));
  other.capture(stream, [&](cudaStream_t s) {
    gctest::fill_and_copy(s, device, host, 9);
    CUDA_REQUIRE(cudaLaunchHostFunc(s, count_call, &calls)); // another topology
  });
  first.instantiate();
  const cudaGraphExec_t executable = first.raw_exec();
  const gc::update_result refused = other.take_executable(first);
  CHECK(refused.outcome == gc::update_outcome::refused);
  CHECK(gc::to_string(refused.outcome) == "refused");
  CHECK(refused.cuda_result == cudaGraphExecUpdateErrorTopologyChanged);
  CHECK_THAT(std::string(refused.reason), gctest::contains("topology"));
  CHECK(first.raw_exec() == executable); // nothing changed
  CHECK(other.state() == gc::graph_state::captured);
  first.replay(stream);
  stream.synchronize();
  CHECK(host == filled(8));
  CHECK(calls == 0);

  CHECK_THROWS_WITH(first.take_executable(first), gctest::contains("the same graph"));
  gc::lean_graph fresh{gc::keep_graph};
  CHECK_THROWS_WITH(fresh.take_executable(first), gctest::contains("capture first"));
  CHECK_THROWS_WITH(first.take_executable(other), gctest::contains("has none"));
  gc::lean_graph unkept;
  unkept.capture(stream, fill(8));
  CHECK_THROWS_WITH(unkept.take_executable(first), gctest::contains("keep_graph"));
  CHECK(first.raw_exec() == executable);
}

TEST_CASE("recapture keeps the pool's addresses: the same allocations get the same blocks") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  gc::graph graph;
  std::vector<void*> first;
  std::vector<void*> second;
  auto work = [&](std::vector<void*>& blocks, int value) {
    return [&blocks, &host, value](gc::graph::scope& cap) {
      auto* temporary = cap.allocate<unsigned char>(bytes);
      auto* output = cap.allocate<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(temporary, value, bytes, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(output, temporary, bytes, cudaMemcpyDeviceToDevice, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(host.data(), output, bytes, cudaMemcpyDeviceToHost, cap.stream()));
      blocks = {temporary, output};
    };
  };
  graph.capture(stream, work(first, 6));
  graph.replay(stream);
  const gc::update_result result = graph.recapture(stream, work(second, 7));
  INFO(result.reason << " (" << cudaGetErrorName(result.error) << ")");
  CHECK(result.updated());
  CHECK(second == first);
  CHECK(graph.pool_statistics().blocks_in_use == 2);
  CHECK(graph.pool_statistics().slabs == 1);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(7));
}

TEST_CASE_METHOD(fill_fixture,
                 "a recapture that throws leaves the graph empty and no stream capturing") {
  gc::graph graph;
  graph.capture(stream, fill(1));
  CHECK_THROWS_AS(graph.recapture(stream,
                                  [&](cudaStream_t s) {
                                    gctest::fill_and_copy(s, device, host, 2);
                                    throw std::runtime_error("the work failed");
                                  }),
                  std::runtime_error);
  CHECK(graph.empty());
  CHECK_FALSE(gctest::capturing(stream));
  gctest::require_no_last_error();
  const auto result = graph.recapture(stream, fill(3));
  CHECK(result.outcome == gc::update_outcome::instantiated);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(3));
}

TEST_CASE_METHOD(fill_fixture, "begin_recapture: the RAII form, with keep_graph") {
  gc::lean_graph graph{gc::keep_graph};
  graph.capture(stream, fill(1));
  graph.replay(stream); // lazy instantiation
  {
    auto cap = graph.begin_recapture(stream);
    gctest::fill_and_copy(cap.stream(), device, host, 8);
    cap.end();
    CHECK(cap.update().updated());
  }
  CHECK(graph.raw_graph() != nullptr); // the new template is kept
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(8));
  CHECK_THROWS_AS(
      [&] {
        auto cap = graph.begin_capture(stream);
        static_cast<void>(graph.begin_recapture(stream));
      }(),
      gc::state_error);
}

TEST_CASE("recapture resolves the liveness inputs again") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  using checked_graph = gc::graph_with<gc::liveness::check>;
  checked_graph graph;
  auto first_input = std::make_unique<gctest::device_buffer<unsigned char>>(bytes);
  gctest::device_buffer<unsigned char> second_input(bytes);
  CUDA_REQUIRE(cudaMemset(first_input->get(), 1, bytes));
  CUDA_REQUIRE(cudaMemset(second_input.get(), 2, bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  auto copy_from = [&](const unsigned char* input) {
    return [&host, input](cudaStream_t s) {
      CUDA_REQUIRE(cudaMemcpyAsync(host.data(), input, bytes, cudaMemcpyDeviceToHost, s));
    };
  };
  graph.capture(stream, copy_from(first_input->get()));
  graph.recapture(stream, copy_from(second_input.get()));
  first_input.reset(); // no longer an input: freeing it is fine
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == filled(2));
}

TEST_CASE_METHOD(fill_fixture,
                 "graph_cache: one graph per key, captured on first use, hits and misses counted") {
  gc::graph_cache<int> cache;
  int captures = 0;
  auto step = [&](int batch) {
    return [&, batch](cudaStream_t s) {
      ++captures; // runs only while capturing (warm-up is off)
      gctest::fill_and_copy(s, device, host, batch);
    };
  };
  for (int round = 0; round < 3; ++round) {
    for (int batch : {1, 2, 4}) {
      cache.replay(batch, stream, step(batch));
      stream.synchronize();
      REQUIRE(host == filled(batch));
    }
  }
  CHECK(captures == 3);
  CHECK(cache.size() == 3);
  CHECK(cache.statistics().misses == 3);
  CHECK(cache.statistics().hits == 6);
  CHECK(cache.statistics().evictions == 0);
  CHECK(cache.contains(2));
  CHECK(cache.find(8) == nullptr);
  STATIC_REQUIRE(
      std::is_same_v<gc::graph_cache<int>::graph_type::mode_type, gc::mode::thread_local_>);
}

TEST_CASE_METHOD(fill_fixture, "graph_cache evicts the least recently used graph") {
  gc::graph_cache<int> cache{{.capacity = 2}};
  cache.replay(1, stream, fill(1));
  cache.replay(2, stream, fill(2));
  cache.replay(1, stream, fill(1)); // 1 is now the most recent
  cache.replay(3, stream, fill(3)); // evicts 2
  CHECK(cache.contains(1));
  CHECK_FALSE(cache.contains(2));
  CHECK(cache.contains(3));
  CHECK(cache.statistics().evictions == 1);
  CHECK(cache.erase(1));
  CHECK_FALSE(cache.erase(1));
  cache.clear();
  CHECK(cache.size() == 0);
  CHECK_THROWS_AS(gc::graph_cache<int>({.capacity = 0}), gc::error);
}

TEST_CASE("graph_cache warm-up runs the work eagerly before capturing it") {
  gctest::stream stream;
  int eager_calls = 0;
  gc::graph_cache<int> cache{{.capacity = 4, .warmup_runs = 2}};
  auto& graph = cache.get(1, stream, [&](cudaStream_t s) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUDA_REQUIRE(cudaStreamIsCapturing(s, &status));
    if (status == cudaStreamCaptureStatusNone) {
      ++eager_calls;
    }
    CUDA_REQUIRE(cudaLaunchHostFunc(s, count_call, &eager_calls));
  });
  stream.synchronize();
  CHECK(eager_calls == 4); // two warm-up runs, each counted twice (host function + flag)
  graph.replay(stream);
  stream.synchronize();
  CHECK(eager_calls == 5);
  CHECK_THROWS_AS(cache.get(2, stream, [](gc::shared_pool_graph::scope&) {}), gc::error);
  CHECK_FALSE(cache.contains(2));
}

TEST_CASE("graph_cache: a churn of keys keeps the shared pool bounded") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  gc::graph_cache<int> cache{{.capacity = 4}};
  auto step = [&](int key) {
    return [&, key](gc::shared_pool_graph::scope& cap) {
      auto* temporary = cap.allocate<unsigned char>(bytes * static_cast<std::size_t>(1 + key % 3));
      auto* output = cap.allocate<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(temporary, key % 250, bytes, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(output, temporary, bytes, cudaMemcpyDeviceToDevice, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(host.data(), output, bytes, cudaMemcpyDeviceToHost, cap.stream()));
      cap.deallocate(temporary);
    };
  };
  std::size_t reserved_after_warm = 0;
  for (int key = 0; key < 200; ++key) {
    cache.replay(key, stream, step(key));
    stream.synchronize();
    REQUIRE(host == filled(key % 250));
    if (key == 20) {
      reserved_after_warm = cache.pool().statistics().reserved_bytes;
    }
  }
  CHECK(cache.statistics().evictions == 196);
  CHECK(cache.pool().statistics().reserved_bytes == reserved_after_warm);
  CHECK(cache.pool().statistics().blocks_in_use <= 2 * 4);
}
