// Runtime tests: liveness::check on graphs the host can execute (memcpy, memset, host functions).
// An input freed (or replaced) before a replay makes replay() throw liveness_error before
// anything is launched; memory the graph allocates itself is never an input.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "liveness_helpers.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gc = graphcap;

namespace {

using checked_graph = gc::graph_with<gc::liveness::check>;

constexpr std::size_t bytes = std::size_t{64} << 10; // below malloc's mmap threshold (the double)

void CUDART_CB add_one(void* counter) {
  ++*static_cast<int*>(counter);
}

/// Device memory the test frees itself (device_buffer would free it again).
void* raw_device_memory(std::size_t size = bytes) {
  void* memory = nullptr;
  CUDA_REQUIRE(cudaMalloc(&memory, size));
  return memory;
}

using gctest::hex;
using gctest::refusal_of;

/// Every byte of `count` bytes of device memory equals `value`.
bool all_bytes_are(const void* device, std::size_t count, unsigned char value) {
  std::vector<unsigned char> host(count);
  CUDA_REQUIRE(cudaMemcpy(host.data(), device, count, cudaMemcpyDeviceToHost));
  for (const unsigned char byte : host) {
    if (byte != value) {
      return false;
    }
  }
  return true;
}

/// A copy from `source` into `destination` and a host-function tick, captured into `graph`.
void capture_copy_and_tick(checked_graph& graph, cudaStream_t stream, void* destination,
                           const void* source, int& ticks,
                           cudaMemcpyKind kind = cudaMemcpyDeviceToDevice) {
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(destination, source, bytes, kind, s));
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &ticks));
  });
}

} // namespace

TEST_CASE("liveness::check: nothing dead, the graph replays as it would unchecked") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> source(bytes);
  gctest::device_buffer<unsigned char> destination(bytes);
  CUDA_REQUIRE(cudaMemset(source.get(), 5, bytes));
  CUDA_REQUIRE(cudaMemset(destination.get(), 0, bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination.get(), source.get(), ticks);
  CHECK(graph.liveness_policy().input_count() == 2);
  // Watched: the first replay checks in full, the next two skip the queries (on the GPU too).
  CHECK(gctest::full_checks_of(graph, stream, 3) == gctest::expected_full_checks(3));
  stream.synchronize();
  CHECK(ticks == 3);
  CHECK(all_bytes_are(destination.get(), bytes, 5));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: a freed input refuses the replay, and nothing is launched") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* source = raw_device_memory();
  gctest::device_buffer<unsigned char> destination(bytes);
  CUDA_REQUIRE(cudaMemset(source, 5, bytes));
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination.get(), source, ticks);
  graph.replay(stream);
  stream.synchronize();
  REQUIRE(ticks == 1);

  CUDA_REQUIRE(cudaMemset(destination.get(), 7, bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  CUDA_REQUIRE(cudaFree(source));
  const std::string refusal = refusal_of(graph, stream);
  stream.synchronize();
  INFO(refusal);
  CHECK(ticks == 1);                                 // the host function did not run
  CHECK(all_bytes_are(destination.get(), bytes, 7)); // the copy did not run
  CHECK_THAT(refusal, gctest::contains("1 input of the graph is no longer alive"));
  CHECK_THAT(refusal, gctest::contains(hex(source) + " freed: memcpy source"));
  CHECK_THAT(refusal, gctest::contains("nothing was launched"));
  gctest::require_no_last_error();
  // Still refused on every later replay: the graph stays unusable until recaptured.
  CHECK_THROWS_AS(graph.replay(stream), gc::liveness_error);
}

TEST_CASE("liveness::check: freed and reallocated at the same address is caught as replaced") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* source = raw_device_memory();
  gctest::device_buffer<unsigned char> destination(bytes);
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination.get(), source, ticks);
  CUDA_REQUIRE(cudaFree(source));

  // A new allocation at the very address the graph baked in: without buffer ids the replay would
  // look fine and read the new owner's data.
  void* replacement = nullptr;
  std::vector<void*> elsewhere;
  for (int attempt = 0; attempt < 64 && replacement != source; ++attempt) {
    if (replacement != nullptr) {
      elsewhere.push_back(replacement);
    }
    replacement = raw_device_memory();
  }
  REQUIRE(replacement == source); // else this test would pass for the wrong reason

  const std::string refusal = refusal_of(graph, stream);
  stream.synchronize();
  INFO(refusal);
  CHECK(ticks == 0);
  CHECK_THAT(refusal, gctest::contains(hex(source) + " replaced"));
  CHECK_THAT(refusal, gctest::contains("memcpy source"));
  gctest::require_no_last_error();
  CUDA_REQUIRE(cudaFree(replacement));
  for (void* memory : elsewhere) {
    CUDA_REQUIRE(cudaFree(memory));
  }
}

TEST_CASE("liveness::check: memory allocated inside the capture is internal, not an input") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> source(bytes);
  gctest::device_buffer<unsigned char> destination(bytes);
  CUDA_REQUIRE(cudaMemset(source.get(), 9, bytes));
  CUDA_REQUIRE(cudaMemset(destination.get(), 0, bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    void* intermediate = nullptr;
    CUDA_REQUIRE(cudaMallocAsync(&intermediate, bytes, s));
    CUDA_REQUIRE(cudaMemsetAsync(intermediate, 1, bytes, s));
    CUDA_REQUIRE(cudaMemcpyAsync(intermediate, source.get(), bytes, cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(
        cudaMemcpyAsync(destination.get(), intermediate, bytes, cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaFreeAsync(intermediate, s));
  });
  CHECK(graph.liveness_policy().input_count() == 2); // source and destination only
  for (int i = 0; i < 3; ++i) {
    graph.replay(stream); // the intermediate gets a fresh allocation every replay: still fine
  }
  stream.synchronize();
  CHECK(all_bytes_are(destination.get(), bytes, 9));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: the freed pinned host source of a copy is caught") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* pinned = nullptr;
  CUDA_REQUIRE(cudaMallocHost(&pinned, bytes));
  gctest::device_buffer<unsigned char> destination(bytes);
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination.get(), pinned, ticks, cudaMemcpyHostToDevice);
  CHECK(graph.liveness_policy().input_count() == 2);
  graph.replay(stream);
  stream.synchronize();
  CUDA_REQUIRE(cudaFreeHost(pinned));
  const std::string refusal = refusal_of(graph, stream);
  stream.synchronize();
  INFO(refusal);
  CHECK(ticks == 1);
  CHECK_THAT(refusal, gctest::contains(hex(pinned) + " freed: memcpy source"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: a freed destination is caught and named") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> source(bytes);
  void* destination = raw_device_memory();
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination, source.get(), ticks);
  CUDA_REQUIRE(cudaFree(destination));
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(destination) + " freed: memcpy destination"));
  CHECK(ticks == 0);
}

TEST_CASE("liveness::check: an input declared with input() and then freed is caught") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* indirect = raw_device_memory();
  int ticks = 0;
  checked_graph graph;
  graph.capture(stream, [&](checked_graph::scope& cap) {
    CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), add_one, &ticks));
    cap.input(indirect); // e.g. a pointer the graph's kernels read from a table in device memory
  });
  CHECK(graph.liveness_policy().input_count() == 1);
  graph.replay(stream);
  stream.synchronize();
  CUDA_REQUIRE(cudaFree(indirect));
  const std::string refusal = refusal_of(graph, stream);
  stream.synchronize();
  INFO(refusal);
  CHECK(ticks == 1);
  CHECK_THAT(refusal, gctest::contains(hex(indirect) + " freed: declared with input()"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: a pointer declared with input() must be CUDA memory") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  int on_the_stack = 0;
  checked_graph graph;
  try {
    graph.capture(stream, [&](checked_graph::scope& cap) {
      CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), add_one, &on_the_stack));
      cap.input(&on_the_stack);
    });
    FAIL("the capture accepted an input it cannot check");
  } catch (const gc::cuda_error& failure) {
    CHECK_THAT(std::string(failure.what()), gctest::contains("input()"));
    CHECK_THAT(std::string(failure.what()), gctest::contains("liveness token"));
  }
  CHECK(graph.empty());
  CHECK(graph.liveness_policy().input_count() == 0);
  CHECK_FALSE(gctest::capturing(stream));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: an expired liveness token refuses the replay") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> slab(bytes); // a sub-allocator's slab: it stays allocated
  auto piece_alive = std::make_shared<int>(0);      // the allocator's token for one piece of it
  void* piece = slab.get() + 256;
  int ticks = 0;
  checked_graph graph;
  graph.capture(stream, [&](checked_graph::scope& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(piece, 0, 256, cap.stream()));
    CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), add_one, &ticks));
    cap.input(piece, piece_alive);
  });
  graph.replay(stream);
  stream.synchronize();
  piece_alive.reset(); // the allocator took the piece back: the slab's buffer id did not change
  const std::string refusal = refusal_of(graph, stream);
  stream.synchronize();
  INFO(refusal);
  CHECK(ticks == 1);
  CHECK_THAT(refusal, gctest::contains(hex(piece) + " released by its allocator"));
  CHECK_THAT(refusal, gctest::contains("memset destination"));
  CHECK_THAT(refusal, gctest::contains("declared with input() and a liveness token"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: a replay from another thread is checked too") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* target = raw_device_memory();
  checked_graph graph;
  graph.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(target, 1, bytes, s)); });
  CUDA_REQUIRE(cudaFree(target));
  std::string refusal;
  std::thread other([&] { refusal = refusal_of(graph, stream); });
  other.join();
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(target) + " freed: memset destination"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: reset, a failed capture and recapture drop the old tracking") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* first = raw_device_memory();
  gctest::device_buffer<unsigned char> second(bytes);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(first, 1, bytes, s)); });
  CHECK(graph.liveness_policy().input_count() == 1);
  graph.reset();
  CHECK(graph.liveness_policy().input_count() == 0);

  // A capture that fails after declaring an input leaves nothing tracked either.
  CHECK_THROWS_AS(graph.capture(stream,
                                [&](checked_graph::scope& cap) {
                                  cap.input(first);
                                  throw std::runtime_error("from the work");
                                }),
                  std::runtime_error);
  CHECK(graph.liveness_policy().input_count() == 0);

  graph.capture(stream,
                [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(second.get(), 2, bytes, s)); });
  CHECK(graph.liveness_policy().input_count() == 1);
  CUDA_REQUIRE(cudaFree(first)); // the old graph's input: no longer this graph's business
  graph.replay(stream);
  stream.synchronize();
  CHECK(all_bytes_are(second.get(), bytes, 2));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: the error lists 8 dead inputs, then says how many more") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  std::vector<void*> buffers(11);
  for (void*& buffer : buffers) {
    buffer = raw_device_memory(1024);
  }
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    for (void* buffer : buffers) {
      CUDA_REQUIRE(cudaMemsetAsync(buffer, 0, 1024, s));
      CUDA_REQUIRE(cudaMemsetAsync(buffer, 1, 1024, s)); // two nodes, one input
    }
  });
  CHECK(graph.liveness_policy().input_count() == 11);
  for (void* buffer : buffers) {
    CUDA_REQUIRE(cudaFree(buffer));
  }
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains("11 inputs of the graph are no longer alive"));
  CHECK_THAT(refusal, gctest::contains("memset destination (in 2 nodes)"));
  CHECK_THAT(refusal, gctest::contains("\n  and 3 more"));
  std::size_t listed = 0;
  for (void* buffer : buffers) {
    listed += refusal.find(hex(buffer) + " freed") != std::string::npos ? 1 : 0;
  }
  CHECK(listed == 8);
}

TEST_CASE("liveness::check: excluded memory is internal, never an input") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> slab(bytes);
  gctest::device_buffer<unsigned char> outside(bytes);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    gc::exclude_from_liveness(graph, slab.get(), bytes / 2); // before the node is seen
    CUDA_REQUIRE(cudaMemsetAsync(slab.get(), 0, 16, s));
    CUDA_REQUIRE(cudaMemsetAsync(slab.get() + bytes / 2, 0, 16, s)); // past the excluded range
    CUDA_REQUIRE(cudaMemsetAsync(outside.get(), 0, 16, s));
  });
  CHECK(graph.liveness_policy().input_count() == 2);
  gc::exclude_from_liveness(graph, outside.get(), bytes); // after the capture: dropped at once
  CHECK(graph.liveness_policy().input_count() == 1);
  graph.replay(stream);
  stream.synchronize();
  gctest::require_no_last_error();
}

TEST_CASE("memory of the graph's own pool is internal, never an input") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  graphcap::graph_with<graphcap::pool::private_pool, graphcap::liveness::check> graph;
  std::vector<unsigned char> host(256, 0);
  graph.capture(stream, [&](auto& cap) {
    auto* block = cap.template allocate<unsigned char>(256);
    CUDA_REQUIRE(cudaMemsetAsync(block, 3, 256, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), block, 256, cudaMemcpyDeviceToHost, cap.stream()));
  });
  CHECK(graph.liveness_policy().input_count() == 0);
  graph.replay(stream);
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  CHECK(host[255] == 3);
}

TEST_CASE("with a shared pool, one graph's output that another reads is internal to the pool") {
  GCTEST_WATCH_FREES();
  // PyTorch's rule: graphs of one pool hand memory to each other. The consumer reads the
  // producer's output block; the producer is reset (its block goes back to the pool) and the
  // consumer still replays: pool memory is never an external input, even when another graph
  // allocated it.
  using checked_shared = gc::graph_with<gc::pool::shared, gc::liveness::check>;
  const auto pool = gc::graph_pool_handle();
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  checked_shared producer{pool};
  auto* output = producer.capture([&](checked_shared::scope& cap) {
    auto* block = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(block, 4, bytes, cap.stream()));
    return block;
  });
  checked_shared consumer{pool};
  consumer.capture([&](checked_shared::scope& cap) {
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), output, bytes, cudaMemcpyDeviceToHost, cap.stream()));
  });
  CHECK(consumer.liveness_policy().input_count() == 0); // the producer's block is the pool's
  producer.replay(stream);
  consumer.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 4));
  producer.reset();
  CHECK_NOTHROW(consumer.replay(stream)); // reads pool memory: internal, not checked
  stream.synchronize();
}

TEST_CASE("liveness::check: a range excluded after the capture, an input added after it") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> source(bytes);
  gctest::device_buffer<unsigned char> destination(bytes);
  CUDA_REQUIRE(cudaMemset(source.get(), 5, bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize());
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination.get(), source.get(), ticks);
  CHECK(graph.liveness_policy().input_count() == 2);
  // A false positive (say, a parameter word that merely equals an address) is excluded.
  gc::exclude_from_liveness(graph, source.get(), bytes);
  CHECK(graph.liveness_policy().input_count() == 1);
  // Memory the graph reaches through a pointer table, declared after the capture.
  void* table_target = raw_device_memory();
  gc::add_liveness_input(graph, table_target);
  CHECK(graph.liveness_policy().input_count() == 2);
  graph.replay(stream);
  stream.synchronize();
  CHECK(ticks == 1);
  CUDA_REQUIRE(cudaFree(table_target)); // the graph itself never touches it
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(table_target) + " freed: declared with input()"));
  CHECK(ticks == 1);
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: an input freed with cudaFreeAsync is caught") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* source = nullptr;
  CUDA_REQUIRE(cudaMallocAsync(&source, bytes, stream));
  CUDA_REQUIRE(cudaMemsetAsync(source, 5, bytes, stream));
  gctest::device_buffer<unsigned char> destination(bytes);
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination.get(), source, ticks);
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  REQUIRE(ticks == 2);
  CUDA_REQUIRE(cudaFreeAsync(source, stream));
  stream.synchronize(); // the free has run
  const std::string refusal = refusal_of(graph, stream);
  stream.synchronize();
  INFO(refusal);
  CHECK(ticks == 2);
  CHECK_THAT(refusal, gctest::contains(hex(source) + " freed: memcpy source"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: an input freed on another thread is caught") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* target = raw_device_memory();
  int ticks = 0;
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(target, 1, bytes, s));
    CUDA_REQUIRE(cudaLaunchHostFunc(s, add_one, &ticks));
  });
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  std::thread other([&] { CUDA_REQUIRE(cudaFree(target)); });
  other.join();
  const std::string refusal = refusal_of(graph, stream);
  stream.synchronize();
  INFO(refusal);
  CHECK(ticks == 2);
  CHECK_THAT(refusal, gctest::contains(hex(target) + " freed: memset destination"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check: frees of other memory between replays refuse nothing, the input's "
          "free is caught") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  void* source = raw_device_memory();
  gctest::device_buffer<unsigned char> destination(bytes);
  int ticks = 0;
  checked_graph graph;
  capture_copy_and_tick(graph, stream, destination.get(), source, ticks);
  for (int round = 0; round < 3; ++round) {
    // Watched: after the capture or a free, one full check, then the one-load path.
    CHECK(gctest::full_checks_of(graph, stream, 2) == gctest::expected_full_checks(2));
    CUDA_REQUIRE(cudaFree(raw_device_memory())); // someone else's memory comes and goes
  }
  graph.replay(stream);
  stream.synchronize();
  REQUIRE(ticks == 7);
  CUDA_REQUIRE(cudaFree(source));
  CHECK_THROWS_AS(graph.replay(stream), gc::liveness_error);
  stream.synchronize();
  CHECK(ticks == 7);
  gctest::require_no_last_error();
}
