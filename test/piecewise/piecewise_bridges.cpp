// Bridges of piecewise graphs (<graphcap/piecewise.hpp>, docs/piecewise.md "Bridges"): a pool
// block allocated in one segment and freed in a later one, reused by the step's later segments,
// by later captures and by the other keys of a family; the bad frees; pool() of a piecewise
// graph. Host-executable work only (memset, memcpy), so that both backends run it.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

using piecewise = gc::piecewise_graph<>;
using shared_step = gc::piecewise_graph<gc::shared_pool_graph>;
using step_family = gc::graph_family<std::size_t, shared_step>;

/// A decode step of `layers` layers for `tokens` tokens, written as a serving engine writes it:
/// per layer a segment makes the QKV projection of the residual, an island (attention) reads it
/// and writes the attention output, and the next segment adds it to the residual into a new one.
/// The residual, QKV and attention output cross an island; with `free_bridges` each is freed in
/// the segment after its last use (else held until the graph is reset: what had to be done before
/// bridges could be freed). Returns the logits, kept.
template <class Scope>
float* decode_step(Scope& cap, std::size_t tokens, std::size_t layers, bool free_bridges) {
  constexpr std::size_t hidden = 4096; // 16 KiB of floats per token
  const std::size_t row = tokens * hidden;
  float* x = cap.template allocate<float>(row);
  CUDA_REQUIRE(cudaMemsetAsync(x, 0, row * sizeof(float), cap.stream()));
  for (std::size_t layer = 0; layer < layers; ++layer) {
    float* qkv = cap.template allocate<float>(3 * row);
    float* attention = cap.template allocate<float>(row);
    CUDA_REQUIRE(
        cudaMemcpyAsync(qkv, x, row * sizeof(float), cudaMemcpyDeviceToDevice, cap.stream()));
    cap.eager([qkv, attention, row](cudaStream_t s) { // reads qkv, writes attention
      CUDA_REQUIRE(
          cudaMemcpyAsync(attention, qkv, row * sizeof(float), cudaMemcpyDeviceToDevice, s));
    });
    float* next = cap.template allocate<float>(row);
    CUDA_REQUIRE(cudaMemcpyAsync(next, attention, row * sizeof(float), cudaMemcpyDeviceToDevice,
                                 cap.stream()));
    if (free_bridges) {
      cap.deallocate(qkv);       // allocated before the island: a bridge
      cap.deallocate(attention); // written by the island
      cap.deallocate(x);         // the residual of the layer before
    }
    x = next;
  }
  float* logits = cap.template allocate<float>(tokens * 64);
  CUDA_REQUIRE(cudaMemsetAsync(logits, 0, tokens * 64 * sizeof(float), cap.stream()));
  if (free_bridges) {
    cap.deallocate(x);
  }
  return logits;
}

constexpr std::size_t layers = 8;

/// The reserved bytes of the decode step for `tokens` captured alone, in a pool of its own.
std::size_t alone(gctest::stream& stream, std::size_t tokens, bool free_bridges) {
  shared_step step{gc::graph_pool_handle()};
  step.capture(stream, [&](shared_step::scope& cap) {
    static_cast<void>(decode_step(cap, tokens, layers, free_bridges));
  });
  return step.pool_statistics().reserved_bytes;
}

/// The reserved bytes of a family of the decode step, one key per bucket.
std::size_t family_reserved(gctest::stream& stream, const std::vector<std::size_t>& buckets,
                            bool free_bridges) {
  step_family family;
  const gc::family_capture_result<std::size_t> result =
      family.capture_all(buckets, stream, [&](std::size_t tokens, shared_step::scope& cap) {
        static_cast<void>(decode_step(cap, tokens, layers, free_bridges));
      });
  REQUIRE(result.failures.empty());
  for (const std::size_t tokens : buckets) {
    static_cast<void>(family.replay_at_least(tokens, stream));
  }
  stream.synchronize();
  return family.pool().statistics().reserved_bytes;
}

} // namespace

TEST_CASE("piecewise bridges: a block freed after the break that followed its allocation is "
          "reused by the later segments of the step") {
  gctest::stream stream;
  constexpr std::size_t n = 1024;
  piecewise step;
  float* first = nullptr;
  float* second = nullptr;
  float* third = nullptr;
  step.capture(stream, [&](piecewise::scope& cap) {
    first = cap.allocate<float>(n); // segment 0
    CUDA_REQUIRE(cudaMemsetAsync(first, 0, n * sizeof(float), cap.stream()));
    cap.eager([](cudaStream_t /*s*/) {});
    second = cap.allocate<float>(n); // segment 1
    CUDA_REQUIRE(
        cudaMemcpyAsync(second, first, n * sizeof(float), cudaMemcpyDeviceToDevice, cap.stream()));
    cap.deallocate(first); // a bridge freed in a later segment than its own
    cap.eager([](cudaStream_t /*s*/) {});
    third = cap.allocate<float>(n); // segment 2: takes the bridge again
    CUDA_REQUIRE(
        cudaMemcpyAsync(third, second, n * sizeof(float), cudaMemcpyDeviceToDevice, cap.stream()));
  });
  CHECK(third == first);
  CHECK(second != first);
  CHECK(step.pool_statistics().blocks_in_use == 2);
  step.replay(stream);
  stream.synchronize();

  // A recapture gives each segment its blocks in the same order: the same addresses.
  float* again = nullptr;
  step.recapture(stream, [&](piecewise::recapture_scope& cap) {
    float* a = cap.allocate<float>(n);
    CHECK(a == first);
    cap.eager([](cudaStream_t /*s*/) {});
    float* b = cap.allocate<float>(n);
    CHECK(b == second);
    cap.deallocate(a);
    cap.eager([](cudaStream_t /*s*/) {});
    again = cap.allocate<float>(n);
  });
  CHECK(again == first);
  CHECK(step.pool_statistics().blocks_in_use == 2);
  CHECK(step.pool_statistics().slabs == 1);
  step.replay(stream);
  stream.synchronize();
}

TEST_CASE("piecewise bridges: with pool::shared a bridge goes back to the pool when the freeing "
          "segment ends, for the later segments and the next graph") {
  gctest::stream stream;
  constexpr std::size_t n = 1024;
  const gc::pool_handle pool = gc::graph_pool_handle();
  shared_step step{pool};
  float* bridge = nullptr;
  float* later = nullptr;
  step.capture(stream, [&](shared_step::scope& cap) {
    bridge = cap.allocate<float>(n);
    cap.eager([](cudaStream_t /*s*/) {});
    cap.deallocate(bridge);
    cap.eager([](cudaStream_t /*s*/) {});
    later = cap.allocate<float>(n); // from the pool, where segment 1 gave the bridge back
  });
  CHECK(later == bridge);
  CHECK(pool.statistics().blocks_in_use == 1);
  step.replay(stream);
  stream.synchronize();

  shared_step next{pool};
  next.capture(stream, [&](shared_step::scope& cap) {
    float* a = cap.allocate<float>(n);
    cap.eager([](cudaStream_t /*s*/) {});
    cap.deallocate(a);
  });
  CHECK(pool.statistics().blocks_in_use == 1); // the bridge of `next` went back too
  CHECK(pool.statistics().slabs == 1);
}

TEST_CASE("piecewise bridges: a family whose tensors cross islands reserves at most 1.2x the "
          "largest key alone when the bridges are freed") {
  gctest::stream stream;
  std::vector<std::size_t> buckets;
  for (std::size_t tokens = 1; tokens <= 128; tokens *= 2) { // 1, 2, 4, ..., 128
    buckets.push_back(tokens);
    if (tokens >= 8 && tokens < 128) {
      buckets.push_back(tokens + tokens / 2); // 12, 24, 48, 96
    }
  }
  const std::size_t largest_freed = alone(stream, 128, true);
  const std::size_t largest_held = alone(stream, 128, false);
  const std::size_t freed = family_reserved(stream, buckets, true);
  const std::size_t held = family_reserved(stream, buckets, false);
  std::printf("decode family of %zu keys, %zu layers: largest key alone %zu bytes (bridges held: "
              "%zu); the family %zu bytes with bridges freed (%.3fx), %zu held (%.3fx)\n",
              buckets.size(), layers, largest_freed, largest_held, freed,
              static_cast<double>(freed) / static_cast<double>(largest_freed), held,
              static_cast<double>(held) / static_cast<double>(largest_freed));
  CHECK(static_cast<double>(freed) <= 1.2 * static_cast<double>(largest_freed));
  CHECK(held > 4 * freed); // what holding every bridge cost
}

TEST_CASE("piecewise bridges: a bridge freed twice is a bridge_error naming the segments") {
  gctest::stream stream;
  piecewise step;
  try {
    step.capture(stream, [&](piecewise::scope& cap) {
      float* bridge = cap.allocate<float>(16);
      cap.eager([](cudaStream_t /*s*/) {});
      cap.deallocate(bridge); // segment 1
      cap.eager([](cudaStream_t /*s*/) {});
      cap.deallocate(bridge); // segment 2: twice
    });
    FAIL("no bridge_error");
  } catch (const gc::bridge_error& failure) {
    CHECK(failure.why() == gc::bridge_error::reason::freed_twice);
    CHECK_THAT(std::string{failure.what()},
               gctest::contains("deallocate() in segment 2 of a piecewise capture was given a "
                                "block allocated in segment 0, which segment 1 deallocated "
                                "already"));
  }
  CHECK(step.empty()); // a failed capture: nothing kept, nothing capturing
  CHECK_FALSE(gctest::capturing(stream));

  // Freed in its own segment, then again after a break.
  try {
    step.capture(stream, [&](piecewise::scope& cap) {
      float* block = cap.allocate<float>(16);
      cap.deallocate(block);
      cap.eager([](cudaStream_t /*s*/) {});
      cap.deallocate(block);
    });
    FAIL("no bridge_error");
  } catch (const gc::bridge_error& failure) {
    CHECK(failure.why() == gc::bridge_error::reason::freed_twice);
    CHECK(failure.allocated_in() == 0);
    CHECK(failure.already_freed_in() == 0);
    CHECK(failure.freed_in() == 1);
  }

  // pool::shared: the bridge went back to the pool when segment 1 ended.
  shared_step shared{gc::graph_pool_handle()};
  try {
    shared.capture(stream, [&](shared_step::scope& cap) {
      float* bridge = cap.allocate<float>(16);
      cap.eager([](cudaStream_t /*s*/) {});
      cap.deallocate(bridge);
      cap.eager([](cudaStream_t /*s*/) {});
      cap.eager([](cudaStream_t /*s*/) {});
      cap.deallocate(bridge);
    });
    FAIL("no bridge_error");
  } catch (const gc::bridge_error& failure) {
    CHECK(failure.allocated_in() == 0);
    CHECK(failure.already_freed_in() == 1);
    CHECK(failure.freed_in() == 3);
  }
  CHECK(shared.pool_statistics().blocks_in_use == 0);
}

TEST_CASE("piecewise bridges: a block of a later segment (the capture a recapture replaces) "
          "freed in an earlier one is a bridge_error naming both") {
  gctest::stream stream;
  piecewise step;
  float* late = nullptr;
  step.capture(stream, [&](piecewise::scope& cap) {
    static_cast<void>(cap.allocate<float>(16));
    cap.eager([](cudaStream_t /*s*/) {});
    cap.eager([](cudaStream_t /*s*/) {});
    late = cap.allocate<float>(16); // segment 2
  });
  try {
    step.recapture(stream, [&](piecewise::recapture_scope& cap) {
      cap.deallocate(late); // segment 0 of the recapture: segment 2 of the last capture holds it
    });
    FAIL("no bridge_error");
  } catch (const gc::bridge_error& failure) {
    CHECK(failure.why() == gc::bridge_error::reason::before_allocation);
    CHECK(failure.allocated_in() == 2);
    CHECK(failure.freed_in() == 0);
    CHECK_THAT(std::string{failure.what()},
               gctest::contains("deallocate() in segment 0 of a piecewise capture was given a "
                                "block allocated in segment 2, a later segment"));
  }
  CHECK(step.empty());
  CHECK_FALSE(gctest::capturing(stream));

  // A pointer no segment allocated: the segment's own refusal, as before.
  CHECK_THROWS_WITH(step.capture(stream,
                                 [&](piecewise::scope& cap) {
                                   int local = 0;
                                   cap.eager([](cudaStream_t /*s*/) {});
                                   cap.deallocate(&local);
                                 }),
                    gctest::contains("that this capture did not allocate"));
  // A buffer's memory, after a break: refused as in its own segment.
  CHECK_THROWS_WITH(step.capture(stream,
                                 [&](piecewise::scope& cap) {
                                   gc::buffer<float> kept = cap.make_buffer<float>(16);
                                   cap.eager([](cudaStream_t /*s*/) {});
                                   cap.deallocate(kept.data());
                                 }),
                    gctest::contains("the memory of a graphcap::buffer"));
}

TEST_CASE("piecewise: pool() hands out the segments' pool, before and after a capture") {
  gctest::stream stream;
  piecewise step;
  CHECK(step.pool_statistics().reserved_bytes == 0);
  const gc::pool_handle pool = step.pool(); // before the capture: the captures use it
  step.capture(stream, [&](piecewise::scope& cap) {
    static_cast<void>(cap.allocate<float>(16));
    cap.eager([](cudaStream_t /*s*/) {});
    static_cast<void>(cap.allocate<float>(16));
  });
  CHECK(step.pool() == pool);
  CHECK(pool.statistics().blocks_in_use == 2);
  CHECK(step.pool_statistics().blocks_in_use == 2);
  step.reset();
  CHECK(step.pool() == pool); // the graph's pool across reset(), as a graph's

  piecewise after; // a handle taken after the capture: the same pool
  after.capture(stream, [&](piecewise::scope& cap) { static_cast<void>(cap.allocate<float>(16)); });
  const gc::pool_handle later = after.pool();
  CHECK(later.statistics().blocks_in_use == 1);
  gc::graph_with<gc::pool::shared> other{later};
  other.capture(stream, [&](auto& cap) { static_cast<void>(cap.template allocate<float>(16)); });
  CHECK(after.pool_statistics().blocks_in_use == 2);
}
