// decode_step: a small model's decode loop written the way a serving engine writes it, with
// graphcap's features on together (docs/piecewise.md, "A decode step with every feature on"):
// - one piecewise graph per batch-size bucket (19 buckets, 1 to 128) in a graph_family, all in
//   the family's one pool, each step padded up to the smallest bucket that fits;
// - per step 9 captured segments and 8 attention islands, the islands reading this step's
//   sequence length from the replay's context (replay(stream, ctx)) and a paged KV cache;
// - the residual, QKV and attention output allocated before an island and freed after it
//   (bridges), so that smaller buckets run in the blocks the larger ones freed;
// - the token ids of every step in a new buffer, the graphs rebound to it (no copy);
// - liveness::check on every segment (one check of every input per step);
// - two bursts of steps with an idle gap between them.
// Every step is checked against the same step run eagerly on static buffers and a KV cache of
// its own: the logits must be bit-identical. It exits 1 on a mismatch.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/liveness.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>

#include "decode_model.cuh"
#include "example_support.cuh"

#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

// [types]
// A segment: thread-local capture (the server's other threads go on), the family's shared pool,
// liveness checked; the step: segments with attention islands that take the step's values.
using segment_graph = graphcap::basic_graph<graphcap::mode::thread_local_, graphcap::pool::shared,
                                            graphcap::annot::off, graphcap::liveness::check>;
using step_graph = graphcap::piecewise_graph<segment_graph, decode::step_values>;
using decode_family = graphcap::graph_family<std::size_t, step_graph>;
// [/types]

namespace {

constexpr int ring = 3; // token buffers the host fills in turn
constexpr int steps_per_burst = 24;

/// The host's side of one step: its token ids uploaded into the step's buffer.
void upload_tokens(int* buffer, int step, cudaStream_t stream) {
  const std::vector<int> tokens = decode::tokens_of(step);
  example::check(cudaMemcpyAsync(buffer, tokens.data(), tokens.size() * sizeof(int),
                                 cudaMemcpyHostToDevice, stream),
                 "cudaMemcpyAsync");
}

std::vector<float> read_logits(const float* logits, std::size_t batch, cudaStream_t stream) {
  std::vector<float> host(batch * decode::vocab);
  example::check(cudaMemcpyAsync(host.data(), logits, host.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return host;
}

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
  std::printf("decode_step: %zu buckets, %zu segments and %zu islands per step, %zu executables; "
              "pool %zu KiB reserved\n",
              family.size(), largest.segment_count(), largest.island_count(), family.executables(),
              family.pool().statistics().reserved_bytes / 1024);

  decode::static_buffers buffers;
  const int* current = tokens[0]; // where the graphs read the token ids now
  int mismatches = 0;
  const auto run_step = [&](int step) {
    const std::size_t batch = decode::batch_of(step);
    int* const input = tokens[step % ring];
    upload_tokens(input, step, stream);
    decode::step_values now{decode::prompt + step};
    // [step]
    const std::size_t bucket = *family.find_at_least(batch); // padded up to a bucket
    if (input != current) {
      inputs.rebind(current, input); // recorded; the bucket's graph is patched at sync()
      current = input;
    }
    inputs.sync(bucket);
    family.find(bucket)->replay(stream, now); // 9 segments, 8 islands handed `now`
    // [/step]
    const std::vector<float> replayed = read_logits(logits, bucket, stream);
    decode::static_step by_hand{buffers, stream, now};
    decode::forward(by_hand, bucket, eager, input, eager_logits);
    example::check(cudaGetLastError(), "kernel launch");
    const std::vector<float> expected = read_logits(eager_logits, bucket, stream);
    const bool same =
        std::memcmp(replayed.data(), expected.data(), replayed.size() * sizeof(float)) == 0;
    mismatches += same ? 0 : 1;
    return same;
  };

  int step = 0;
  for (; step < steps_per_burst; ++step) {
    run_step(step);
  }
  std::printf("decode_step: burst 1, %d steps (batches 1..128 padded to 19 buckets): %s\n",
              steps_per_burst, mismatches == 0 ? "bit-identical to eager" : "MISMATCH");
  // Between the bursts the engine idles. A family of piecewise graphs cannot sleep its pool
  // yet (docs/piecewise.md, "A decode step with every feature on"): the graphs stay as they are.
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const bool first_after_gap = run_step(step++);
  for (; step < 2 * steps_per_burst; ++step) {
    run_step(step);
  }
  std::printf("decode_step: burst 2, %d steps: first step after the gap %s, all %s\n",
              steps_per_burst, first_after_gap ? "bit-identical" : "MISMATCH",
              mismatches == 0 ? "bit-identical to eager" : "with mismatches");
  std::printf("decode_step: %d of %d steps differ from eager\n", mismatches, 2 * steps_per_burst);

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
