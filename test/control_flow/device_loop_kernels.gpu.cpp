// GPU tests of graphcap::device_loop (<graphcap/device_loop.cuh>): the body runs exactly the trip
// count, fixed or read from device memory at every replay, nested, and with a caller's counter. The
// structure is checked on the double (test/control_flow/control_flow.double.cpp).
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "device_loop_kernels.cuh"

#include <vector>

namespace gc = graphcap;

namespace {

template <class T>
T read(const T* device) {
  T host{};
  CUDA_REQUIRE(cudaMemcpy(&host, device, sizeof host, cudaMemcpyDeviceToHost));
  return host;
}

template <class T>
void write(T* device, T host) {
  CUDA_REQUIRE(cudaMemcpy(device, &host, sizeof host, cudaMemcpyHostToDevice));
}

} // namespace

TEST_CASE("device_loop(cap, n, body) runs the body exactly n times per replay") {
  gctest::stream stream;
  gctest::device_buffer<int> iterations(1);
  for (const unsigned n : {0U, 1U, 5U, 100U}) {
    INFO("n = " << n);
    gc::graph graph;
    gctest::capture_repeat(graph, stream, n, iterations.get());
    write(iterations.get(), 0);
    graph.replay(stream);
    graph.replay(stream); // the counter starts from n again
    stream.synchronize();
    CHECK(read(iterations.get()) == static_cast<int>(2 * n));
  }
  gctest::require_no_last_error();
}

TEST_CASE("device_loop(cap, trips, body) reads the trip count on the device at every replay") {
  gctest::stream stream;
  gctest::device_buffer<int> iterations(1);
  gctest::device_buffer<unsigned> trips(1);
  gc::graph graph;
  gctest::capture_repeat_from_device(graph, stream, trips.get(), iterations.get());
  for (const unsigned n : {3U, 0U, 17U}) {
    INFO("*trips = " << n);
    write(trips.get(), n);
    write(iterations.get(), 0);
    graph.replay(stream); // no recapture: the count is data
    stream.synchronize();
    CHECK(read(iterations.get()) == static_cast<int>(n));
  }
  gctest::require_no_last_error();
}

TEST_CASE("device loops nest") {
  gctest::stream stream;
  gctest::device_buffer<int> outer(1);
  gctest::device_buffer<int> inner(1);
  gc::graph graph;
  gctest::capture_nested_repeat(graph, stream, 4, 3, outer.get(), inner.get());
  write(outer.get(), 0);
  write(inner.get(), 0);
  graph.replay(stream);
  stream.synchronize();
  CHECK(read(outer.get()) == 4);
  CHECK(read(inner.get()) == 12);
  gctest::require_no_last_error();
}

TEST_CASE("device_loop with a caller's counter: the body sees n, n - 1, ..., 1 left") {
  constexpr unsigned n = 6;
  gctest::stream stream;
  gctest::device_buffer<unsigned> counter(1);
  gctest::device_buffer<int> iterations(1);
  gctest::device_buffer<unsigned> left(n);
  gc::lean_graph graph;
  gctest::capture_repeat_with_counter(graph, stream, n, counter.get(), iterations.get(),
                                      left.get());
  write(iterations.get(), 0);
  graph.replay(stream);
  stream.synchronize();
  REQUIRE(read(iterations.get()) == static_cast<int>(n));
  std::vector<unsigned> seen(n);
  CUDA_REQUIRE(cudaMemcpy(seen.data(), left.get(), n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (unsigned i = 0; i < n; ++i) {
    CHECK(seen[i] == n - i);
  }
  CHECK(read(counter.get()) == 0U);
  gctest::require_no_last_error();
}
