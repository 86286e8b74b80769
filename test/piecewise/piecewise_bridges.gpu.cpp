// Bridges of piecewise graphs on the GPU (docs/piecewise.md, "Bridges"): a decode-like family of
// piecewise steps whose residual, QKV and attention output cross the islands and are freed after
// them, with kernels: every key computes what the same step computes eagerly, after blocks were
// reused across breaks and between keys, and the family's pool reserves at most 1.2x the largest
// key captured alone.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "kernels.cuh"

#include <cstddef>
#include <cstdio>
#include <vector>

namespace gc = graphcap;

namespace {

using step_graph = gc::piecewise_graph<gc::shared_pool_graph>;
using step_family = gc::graph_family<std::size_t, step_graph>;

constexpr std::size_t hidden = 4096;
constexpr std::size_t layers = 8;
constexpr std::size_t vocabulary = 64;

/// One layer adds 2 + `length` to every element of the residual: QKV = x + 1 (segment), the
/// attention output = QKV + length (island, a host value read at every replay), the next residual
/// = attention + 1 (segment). Every tensor that crosses an island is freed after its last use
/// (with `free_bridges`). The logits are the first tokens * 64 elements of the last residual.
float* decode_step(step_graph::scope& cap, std::size_t tokens, const float& length,
                   bool free_bridges) {
  const std::size_t row = tokens * hidden;
  float* x = cap.allocate<float>(row);
  gctest::launch_fill(cap.stream(), x, 1.0F, row);
  for (std::size_t layer = 0; layer < layers; ++layer) {
    float* qkv = cap.allocate<float>(3 * row);
    CUDA_REQUIRE(
        cudaMemcpyAsync(qkv, x, row * sizeof(float), cudaMemcpyDeviceToDevice, cap.stream()));
    gctest::launch_add_scalar(cap.stream(), qkv, 1.0F, row);
    float* attention = cap.allocate<float>(row);
    cap.eager([qkv, attention, row, &length](cudaStream_t s) {
      CUDA_REQUIRE(
          cudaMemcpyAsync(attention, qkv, row * sizeof(float), cudaMemcpyDeviceToDevice, s));
      gctest::launch_add_scalar(s, attention, length, row);
    });
    float* next = cap.allocate<float>(row);
    CUDA_REQUIRE(cudaMemcpyAsync(next, attention, row * sizeof(float), cudaMemcpyDeviceToDevice,
                                 cap.stream()));
    gctest::launch_add_scalar(cap.stream(), next, 1.0F, row);
    if (free_bridges) {
      cap.deallocate(qkv);
      cap.deallocate(attention);
      cap.deallocate(x);
    }
    x = next;
  }
  float* logits = cap.allocate<float>(tokens * vocabulary);
  CUDA_REQUIRE(cudaMemcpyAsync(logits, x, tokens * vocabulary * sizeof(float),
                               cudaMemcpyDeviceToDevice, cap.stream()));
  if (free_bridges) {
    cap.deallocate(x);
  }
  return logits;
}

/// The logits' expected sum after one replay with `length`.
double expected(std::size_t tokens, float length) {
  return static_cast<double>(tokens * vocabulary) *
         (1.0 + static_cast<double>(layers) * (2.0 + static_cast<double>(length)));
}

} // namespace

TEST_CASE("piecewise bridges on the GPU: a decode family frees its bridges, computes what it "
          "computes with them held, and reserves at most 1.2x the largest key alone") {
  gctest::stream stream;
  float length = 0.0F;
  const std::vector<std::size_t> buckets{1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128};

  step_graph alone{gc::graph_pool_handle()};
  float* alone_logits = alone.capture(
      stream, [&](step_graph::scope& cap) { return decode_step(cap, 128, length, true); });
  const std::size_t largest = alone.pool_statistics().reserved_bytes;
  length = 3.0F;
  alone.replay(stream);
  stream.synchronize();
  CHECK(gctest::sum(alone_logits, 128 * vocabulary) == expected(128, 3.0F));

  for (const bool free_bridges : {true, false}) {
    std::vector<float*> logits(129, nullptr);
    step_family family;
    REQUIRE(family
                .capture_all(buckets, stream,
                             [&](std::size_t tokens, step_graph::scope& cap) {
                               logits[tokens] = decode_step(cap, tokens, length, free_bridges);
                             })
                .complete());
    for (int step = 0; step < 3; ++step) {
      length = static_cast<float>(step + 1);
      for (const std::size_t tokens : buckets) {
        REQUIRE(family.replay_at_least(tokens, stream) == tokens);
        stream.synchronize();
        CHECK(gctest::sum(logits[tokens], tokens * vocabulary) == expected(tokens, length));
      }
    }
    const std::size_t reserved = family.pool().statistics().reserved_bytes;
    std::printf("GPU decode family of %zu keys, bridges %s: %zu bytes reserved, %.3fx the "
                "largest key alone (%zu bytes)\n",
                buckets.size(), free_bridges ? "freed" : "held", reserved,
                static_cast<double>(reserved) / static_cast<double>(largest), largest);
    if (free_bridges) {
      CHECK(static_cast<double>(reserved) <= 1.2 * static_cast<double>(largest));
    } else {
      CHECK(reserved > 4 * largest);
    }
  }
}
