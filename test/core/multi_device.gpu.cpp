// GPU tests on two devices: a graph belongs to the device it was captured on.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"

#include <cstdio>
#include <string>

namespace gc = graphcap;

namespace {

constexpr std::size_t n = 1024;

/// Selects `device` for the scope of the object.
class device_scope {
public:
  explicit device_scope(int device) {
    CUDA_REQUIRE(cudaGetDevice(&previous_));
    CUDA_REQUIRE(cudaSetDevice(device));
  }
  ~device_scope() { static_cast<void>(cudaSetDevice(previous_)); }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

private:
  int previous_ = 0;
};

} // namespace

TEST_CASE("a graph captured on device 0 replays on a device-0 stream while device 1 is current") {
  CUDA_REQUIRE(cudaSetDevice(0));
  gctest::stream stream0; // created on device 0
  gctest::device_buffer<float> data(n);
  gctest::launch_fill(stream0, data.get(), 0.0F, n);
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) { gctest::launch_add_scalar(s, data.get(), 1.0F, n); });
  CHECK(graph.device() == 0);
  {
    const device_scope on_one(1);
    graph.replay(stream0);
    CUDA_REQUIRE(cudaStreamSynchronize(stream0));
  }
  CHECK(gctest::sum(data.get(), n) == static_cast<double>(n));
}

TEST_CASE("replay on the default stream while another device is current: works or names both") {
  CUDA_REQUIRE(cudaSetDevice(0));
  gctest::device_buffer<float> data(n);
  gctest::launch_fill(nullptr, data.get(), 0.0F, n);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) { gctest::launch_add_scalar(s, data.get(), 1.0F, n); });
  bool replayed = false;
  std::string refusal;
  {
    const device_scope on_one(1);
    try {
      graph.replay(); // device 1's legacy stream
      CUDA_REQUIRE(cudaDeviceSynchronize());
      replayed = true;
    } catch (const gc::cuda_error& failure) {
      refusal = failure.what();
      INFO(failure.what());
      CHECK_THAT(std::string(failure.what()), gctest::contains("captured on device 0"));
      CHECK_THAT(std::string(failure.what()), gctest::contains("device 1 is current"));
    }
  }
  CUDA_REQUIRE(cudaDeviceSynchronize());
  // Printed on every run, not only on a failure: the log records which of the two CUDA did.
  std::printf("OBSERVED: replay on another device's default stream %s%s\n",
              replayed ? "worked" : "threw: ", refusal.c_str());
  std::fflush(stdout);
  CHECK(gctest::sum(data.get(), n) == (replayed ? static_cast<double>(n) : 0.0));
  gctest::require_no_last_error();
}

TEST_CASE("after reset, a graph captures on another device with a side stream of that device") {
  gc::lean_graph graph;
  {
    const device_scope on_zero(0);
    graph.capture([](cudaStream_t) {});
    CHECK(graph.device() == 0);
  }
  graph.reset();
  const device_scope on_one(1);
  gctest::device_buffer<float> data(n); // on device 1
  gctest::launch_fill(nullptr, data.get(), 0.0F, n);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  cudaStream_t side = nullptr;
  graph.capture([&](cudaStream_t s) {
    side = s; // (cudaStreamGetDevice on a capturing stream would invalidate the capture)
    gctest::launch_add_scalar(s, data.get(), 2.0F, n);
  });
  int stream_device = -1;
  CUDA_REQUIRE(cudaStreamGetDevice(side, &stream_device));
  CHECK(stream_device == 1);
  CHECK(graph.device() == 1);
  graph.replay();
  CUDA_REQUIRE(cudaDeviceSynchronize());
  CHECK(gctest::sum(data.get(), n) == 2.0 * n);
}

TEST_CASE("side stream on device 0, an explicit stream on device 1, then the side stream on 1") {
  // The sequence that once captured on the device-0 side stream: an explicit-stream capture
  // recorded device 1 as the graph's device, so the side stream looked current.
  gc::lean_graph graph;
  {
    const device_scope on_zero(0);
    graph.capture([](cudaStream_t) {});
  }
  graph.reset();
  const device_scope on_one(1);
  gctest::stream stream_on_one;
  gctest::device_buffer<float> data(n); // on device 1
  gctest::launch_fill(stream_on_one, data.get(), 0.0F, n);
  CUDA_REQUIRE(cudaStreamSynchronize(stream_on_one));
  graph.capture(stream_on_one, [](cudaStream_t) {});
  CHECK(graph.device() == 1);
  graph.reset();
  cudaStream_t side = nullptr;
  graph.capture([&](cudaStream_t s) {
    side = s;
    gctest::launch_add_scalar(s, data.get(), 3.0F, n);
  });
  int stream_device = -1;
  CUDA_REQUIRE(cudaStreamGetDevice(side, &stream_device));
  CHECK(stream_device == 1);
  graph.replay(stream_on_one);
  CUDA_REQUIRE(cudaStreamSynchronize(stream_on_one));
  CHECK(gctest::sum(data.get(), n) == 3.0 * n);
}
