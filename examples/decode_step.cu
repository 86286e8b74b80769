// decode_step: a small model's decode loop written the way a serving engine writes it, with
// graphcap's features on together (docs/piecewise.md, "A decode step with every feature on"):
// - one piecewise graph per batch-size bucket (19 buckets, 1 to 128) in a graph_family, all in
//   the family's one sleepable pool (pool::sleepable_shared), each step padded up to the
//   smallest bucket that fits;
// - per step 9 captured segments and 8 attention islands, the islands reading this step's
//   sequence length from the replay's context (replay_at_least(n, stream, ctx)) and a paged KV
//   cache;
// - the residual, QKV and attention output allocated before an island and freed after it
//   (bridges), so that smaller buckets run in the blocks the larger ones freed;
// - the token ids of every step in a new buffer, the graphs rebound to it (no copy);
// - liveness::check on every segment (one check of every input per step);
// - two bursts of steps with a sleep between them: the pool's pages and the executables go,
//   the templates stay, and the first step after the wake instantiates its bucket again.
// Every step is checked against the same step run eagerly on static buffers and a KV cache of
// its own: the logits must be bit-identical. It exits 1 on a mismatch.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/liveness.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "decode_model.cuh"
#include "example_support.cuh"

#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

// [types]
// A segment: thread-local capture (the server's other threads go on), the family's sleepable
// pool shared by the buckets, liveness checked; the step: segments with attention islands that
// take the step's values.
using segment_graph =
    graphcap::basic_graph<graphcap::mode::thread_local_, graphcap::pool::sleepable_shared,
                          graphcap::annot::off, graphcap::liveness::check>;
using step_graph = graphcap::piecewise_graph<segment_graph, decode::step_values>;
using decode_family = graphcap::graph_family<std::size_t, step_graph>;
// [/types]

namespace {

constexpr int ring = 3; // token buffers the host fills in turn
constexpr int steps_per_burst = 24;

} // namespace

int main() {
  if (!example::device_present("decode_step")) {
    return 0;
  }
  cudaStream_t stream = example::create_stream();
  float* weights = decode::make_weights(stream);
  decode::model graphed = decode::make_model(weights, stream); // the graphs' KV cache
  decode::model eager = decode::make_model(weights, stream);   // the eager run's, the same
  std::array<int*, ring> tokens{};
  for (int*& buffer : tokens) {
    buffer = example::allocate<int>(decode::max_batch);
  }
  float* logits = example::allocate<float>(decode::max_batch * decode::vocab);
  float* eager_logits = example::allocate<float>(decode::max_batch * decode::vocab);
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::vector<std::size_t> buckets = decode::buckets();

  // [capture]
  decode_family family;
  const auto captured =
      family.capture_all(decode::buckets(), stream, [&](std::size_t batch, step_graph::scope& cap) {
        decode::forward(cap, batch, graphed, tokens[0], logits); // tokens[0]: rebound per step
      });
  graphcap::rebinder inputs{family, {tokens[0]}}; // the token ids, in every bucket's segments
  // [/capture]
  if (!captured.failures.empty()) {
    std::printf("decode_step: %zu buckets failed to capture: %s\n", captured.failures.size(),
                captured.failures.front().message.c_str());
    return 1;
  }
  const step_graph& largest = *family.find(decode::max_batch);
  std::printf("decode_step: family of %zu buckets, %zu segments and %zu islands per step, %zu "
              "executables; pool %zu KiB reserved\n",
              family.size(), largest.segment_count(), largest.island_count(), family.executables(),
              family.pool().statistics().reserved_bytes / 1024);

  // One step: the host's token ids into the next buffer, the step replayed by `replay_step`,
  // then the same step eagerly; true when the logits are bit-identical.
  decode::static_buffers buffers;
  const auto check_step = [&](int step, auto&& replay_step) {
    int* const input = tokens[static_cast<std::size_t>(step) % ring];
    decode::upload_tokens(input, step, stream);
    decode::step_values now{decode::prompt + step};
    const std::size_t bucket = replay_step(decode::batch_of(step), input, now); // padded up
    const std::vector<float> replayed = decode::read_logits(logits, bucket, stream);
    decode::static_step by_hand{buffers, stream, now};
    decode::forward(by_hand, bucket, eager, input, eager_logits);
    example::check(cudaGetLastError(), "kernel launch");
    const std::vector<float> expected = decode::read_logits(eager_logits, bucket, stream);
    return std::memcmp(replayed.data(), expected.data(), replayed.size() * sizeof(float)) == 0;
  };
  // Two bursts from the prompt's state, `gap` between them; returns the steps that differ.
  const auto run_bursts = [&](auto&& replay_step, auto&& gap) {
    decode::refill_cache(graphed, stream);
    decode::refill_cache(eager, stream);
    int mismatches = 0;
    bool first_after_gap = false;
    for (int step = 0; step < 2 * steps_per_burst; ++step) {
      if (step == steps_per_burst) {
        example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        gap();
      }
      const bool same = check_step(step, replay_step);
      first_after_gap = step == steps_per_burst ? same : first_after_gap;
      mismatches += same ? 0 : 1;
    }
    std::printf("decode_step: 2 bursts of %d steps (batches 1..128 in %zu buckets): %d differ "
                "from eager; the first step after the sleep %s\n",
                steps_per_burst, buckets.size(), mismatches,
                first_after_gap ? "bit-identical" : "DIFFERS");
    return mismatches;
  };

  graphcap::sleepable_pool_handle pool{family.pool()}; // the family's pool, which can sleep
  const int* current = tokens[0]; // where the family's graphs read the token ids now
  std::size_t awake = 0;
  std::size_t asleep = 0;
  std::size_t total = 0;
  const int mismatches = run_bursts(
      [&](std::size_t batch, const int* input, decode::step_values& now) {
        // [step]
        if (input != current) {
          inputs.rebind(current, input); // recorded; the bucket's graph is patched at its replay
          current = input;
        }
        return inputs.replay_at_least(batch, stream, now); // 9 segments, 8 islands get `now`
        // [/step]
      },
      [&] {
        example::check(cudaMemGetInfo(&awake, &total), "cudaMemGetInfo");
        // [sleep]
        // The pool holds the step's temporaries only (the KV cache and the logits are the
        // caller's): nothing in it outlives a step, so no backup is needed.
        pool.sleep(graphcap::pool::backup::none);
        // Templates kept; each bucket instantiated at its replay. give_back presses the driver
        // for the executables' cached memory (for that moment no memory is free on the device).
        family.release_executables(graphcap::executable_memory::give_back);
        // [/sleep]
        example::check(cudaMemGetInfo(&asleep, &total), "cudaMemGetInfo");
        pool.wake();
      });
  std::printf("decode_step: the sleep released %zu KiB of the pool's %zu KiB and the executables "
              "(the weights and the KV caches stay)\n",
              asleep > awake ? (asleep - awake) / 1024 : 0,
              family.pool().statistics().reserved_bytes / 1024);

  for (int* buffer : tokens) {
    example::check(cudaFree(buffer), "cudaFree");
  }
  example::check(cudaFree(logits), "cudaFree");
  example::check(cudaFree(eager_logits), "cudaFree");
  decode::free_cache(graphed);
  decode::free_cache(eager);
  family.clear(); // before the weights its segments read
  example::check(cudaFree(weights), "cudaFree");
  example::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return mismatches == 0 ? 0 : 1;
}
