// GPU tests: liveness::check finds the pointers in kernel parameters, read from the captured
// graph (plain pointers and pointers inside struct parameters), and names the kernel, the
// parameter and its offset when one dies. The kernels live in liveness_kernels.cu.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"
#include "liveness_helpers.hpp"
#include "liveness_kernels.cuh"

#include <cuda.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

using checked_graph = gc::graph_with<gc::liveness::check>;

constexpr std::size_t n = 1000; // also a kernel parameter: small integers are never inputs

float* raw_floats(std::size_t count = n) {
  float* memory = nullptr;
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&memory), count * sizeof(float)));
  return memory;
}

using gctest::hex;
using gctest::refusal_of;

} // namespace

TEST_CASE("liveness::check on kernels: a raw pointer parameter, freed, is caught and named") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  float* data = raw_floats();
  gctest::launch_fill(stream, data, 1.0F, n);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_scale_raw(s, data, 2.0F, n); });
  CHECK(graph.liveness_policy().input_count() == 1);
  gctest::require_no_last_error(); // the scan's driver calls leave no runtime error behind
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(data, n) == 2000.0);

  CUDA_REQUIRE(cudaFree(data));
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(data) + " freed: kernel liveness_scale_raw"));
  CHECK_THAT(refusal, gctest::contains("parameter 0 (offset 0)"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check on kernels: a pointer inside a struct parameter is found") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  float* data = raw_floats();
  gctest::launch_fill(stream, data, 1.0F, n);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    gctest::launch_scale_view(s, gctest::scaled_view{static_cast<int>(n), data}, 3.0F);
  });
  CHECK(graph.liveness_policy().input_count() == 1);
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(data, n) == 3000.0);

  CUDA_REQUIRE(cudaFree(data));
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains("kernel liveness_scale_view"));
  CHECK_THAT(refusal, gctest::contains("parameter 0 (offset 8), the word at byte 8 of it"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check on kernels: a kernel input replaced at the same address is caught") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  float* data = raw_floats();
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_scale_raw(s, data, 2.0F, n); });
  CUDA_REQUIRE(cudaFree(data));
  float* replacement = nullptr;
  std::vector<float*> elsewhere;
  for (int attempt = 0; attempt < 64 && replacement != data; ++attempt) {
    if (replacement != nullptr) {
      elsewhere.push_back(replacement);
    }
    replacement = raw_floats();
  }
  REQUIRE(replacement == data); // else this test would pass for the wrong reason
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(data) + " replaced"));
  CHECK_THAT(refusal, gctest::contains("kernel liveness_scale_raw"));
  CUDA_REQUIRE(cudaFree(replacement));
  for (float* memory : elsewhere) {
    CUDA_REQUIRE(cudaFree(memory));
  }
}

TEST_CASE("liveness::check on kernels: an indirect input is caught only once declared") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  float* source = raw_floats();
  gctest::device_buffer<float> destination(n);
  gctest::device_buffer<const float*> table(1);
  CUDA_REQUIRE(cudaMemcpy(table.get(), &source, sizeof source, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // the legacy-stream call may still run
  gctest::launch_fill(stream, source, 4.0F, n);
  checked_graph graph;
  graph.capture(stream, [&](checked_graph::scope& cap) {
    gctest::launch_copy_indirect(cap.stream(), destination.get(), table.get(), n);
    CHECK(graph.liveness_policy().input_count() == 0); // the graph is scanned at capture end
    cap.input(source); // the kernel reads it through the table: invisible in its parameters
  });
  CHECK(graph.liveness_policy().input_count() == 3); // destination, table, source
  graph.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(destination.get(), n) == 4000.0);

  CUDA_REQUIRE(cudaFree(source));
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(source) + " freed: declared with input()"));
}

TEST_CASE("liveness::check on kernels: a buffer allocated in the graph is not an input") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  gctest::device_buffer<float> result(n);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) {
    float* scratch = nullptr;
    CUDA_REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&scratch), n * sizeof(float), s));
    gctest::launch_fill(s, scratch, 1.0F, n);
    gctest::launch_scale_raw(s, scratch, 5.0F, n);
    CUDA_REQUIRE(
        cudaMemcpyAsync(result.get(), scratch, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaFreeAsync(scratch, s));
  });
  CHECK(graph.liveness_policy().input_count() == 1); // the result only
  for (int i = 0; i < 3; ++i) {
    graph.replay(stream);
  }
  stream.synchronize();
  CHECK(gctest::sum(result.get(), n) == 5000.0);
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check on kernels: freed managed memory is caught") {
  GCTEST_WATCH_FREES();
  gctest::stream stream;
  float* data = nullptr;
  CUDA_REQUIRE(cudaMallocManaged(reinterpret_cast<void**>(&data), n * sizeof(float)));
  gctest::launch_fill(stream, data, 1.0F, n);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_scale_raw(s, data, 2.0F, n); });
  REQUIRE(graph.liveness_policy().input_count() == 1);
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  CHECK(data[0] == 4.0F);
  CUDA_REQUIRE(cudaFree(data));
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(data) + " freed: kernel liveness_scale_raw"));
  gctest::require_no_last_error();
}

TEST_CASE("liveness::check on kernels: memory freed with the driver's cuMemFree is caught") {
  GCTEST_WATCH_FREES();
  using alloc_fn = CUresult(CUDAAPI*)(CUdeviceptr*, std::size_t);
  using free_fn = CUresult(CUDAAPI*)(CUdeviceptr);
  void* alloc_entry = nullptr;
  void* free_entry = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CUDA_REQUIRE(cudaGetDriverEntryPointByVersion("cuMemAlloc", &alloc_entry, 12000,
                                                cudaEnableDefault, &found));
  REQUIRE(found == cudaDriverEntryPointSuccess);
  CUDA_REQUIRE(
      cudaGetDriverEntryPointByVersion("cuMemFree", &free_entry, 12000, cudaEnableDefault, &found));
  REQUIRE(found == cudaDriverEntryPointSuccess);
  const auto mem_alloc = reinterpret_cast<alloc_fn>(alloc_entry); // NOLINT: entry points
  const auto mem_free = reinterpret_cast<free_fn>(free_entry);    // NOLINT: entry points

  gctest::stream stream;
  CUdeviceptr address = 0;
  REQUIRE(mem_alloc(&address, n * sizeof(float)) == CUDA_SUCCESS);
  auto* data = reinterpret_cast<float*>(address); // NOLINT: a device address
  gctest::launch_fill(stream, data, 1.0F, n);
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { gctest::launch_scale_raw(s, data, 2.0F, n); });
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  REQUIRE(mem_free(address) == CUDA_SUCCESS);
  const std::string refusal = refusal_of(graph, stream);
  INFO(refusal);
  CHECK_THAT(refusal, gctest::contains(hex(data) + " freed: kernel liveness_scale_raw"));
  gctest::require_no_last_error();
}
