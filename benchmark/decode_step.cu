// bench_decode_step: the decode step of examples/decode_step.cu (8 layers, hidden 256, a paged
// KV cache; 19 batch buckets 1..128; per step 9 captured segments and 8 attention islands whose
// kernels take the step's sequence length) written two ways, on one stream, each step
// synchronized (metric "decode step", host time per step):
//   raw CUDA graphs        the same design by hand: per bucket 9 cudaStreamBeginCapture /
//                          cudaGraphInstantiate segments over static buffers sized for 128, the
//                          8 attention launches eager between them, the step's token buffer set
//                          into the embedding node with cudaGraphExecKernelNodeSetParams (baseline)
//   graphcap, rebound      a graph_family of piecewise_graph<liveness::check segments, context>,
//                          its token input moved by graphcap::rebinder (sync of the bucket,
//                          template_patch::deferred: the executable alone, as the raw design),
//                          the islands handed the length by replay(stream, ctx)
//   graphcap, copied       the same family, the token ids copied into the captured buffer
//                          (cudaMemcpyAsync device to device) instead of rebound
//   graphcap, rebound, liveness off
//                          the rebound family with liveness::off segments (shared_pool_graph):
//                          what the one check of the step's inputs costs
// Every step's batch (1..128) is padded to its bucket, the token ids of the next step are
// uploaded into the next of 3 buffers outside the timing. Metric "input move": one move of the
// token input alone (rebind + sync of the largest bucket, against the copy it replaces), host
// time per call. Metric "memory": device memory of the decode family measured in an isolated
// phase with cudaMemGetInfo, every executable uploaded (graphcap: its pool and executables; raw:
// its static buffers and executables). Before timing, one step of each design from the same state
// must give bit-identical logits (exit 1 otherwise, after the table is written). Memory also:
// the family in one-executable mode (its executables against one per bucket's), and a sleep
// between bursts (the pool without backup, every executable released): what cudaMemGetInfo
// gets back, and one step after the wake against the raw design.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/liveness.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "../examples/decode_model.cuh"
#include "harness.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

// The example's segments: thread-local capture, the family's sleepable pool shared by the
// buckets (pool::sleepable_shared), liveness checked.
using segment_graph =
    graphcap::basic_graph<graphcap::mode::thread_local_, graphcap::pool::sleepable_shared,
                          graphcap::annot::off, graphcap::liveness::check>;
using step_graph = graphcap::piecewise_graph<segment_graph, decode::step_values>;
using decode_family = graphcap::graph_family<std::size_t, step_graph>;
// The same with liveness off (graphcap::shared_pool_graph segments): what the check costs.
using lean_step = graphcap::piecewise_graph<graphcap::shared_pool_graph, decode::step_values>;
using lean_family = graphcap::graph_family<std::size_t, lean_step>;
using island = std::function<void(cudaStream_t, decode::step_values&)>;

constexpr int ring = 3;
constexpr double mib = 1024.0 * 1024.0;

std::size_t free_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  bench::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  bench::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

/// One bucket of the design written by hand: its segments' graphs and executables, its
/// islands, and the embedding node whose token argument each step sets.
struct raw_bucket {
  std::vector<cudaGraph_t> graphs;
  std::vector<cudaGraphExec_t> execs;
  std::vector<island> islands;
  cudaGraphNode_t embed_node = nullptr;
  cudaKernelNodeParams embed_params{};
  const int* tokens = nullptr; // the embedding kernel's arguments, as set
  const float* table = nullptr;
  float* x = nullptr;
  std::array<void*, 3> args{&tokens, &table, &x};

  raw_bucket() = default;
  raw_bucket(const raw_bucket&) = delete; // args point into it
  raw_bucket& operator=(const raw_bucket&) = delete;
  ~raw_bucket() {
    for (cudaGraphExec_t exec : execs) {
      static_cast<void>(cudaGraphExecDestroy(exec));
    }
    for (cudaGraph_t graph : graphs) {
      static_cast<void>(cudaGraphDestroy(graph));
    }
  }

  /// The step's token buffer, set into the embedding node of segment 0.
  void point_tokens(const int* now) {
    tokens = now;
    bench::check(cudaGraphExecKernelNodeSetParams(execs[0], embed_node, &embed_params),
                 "cudaGraphExecKernelNodeSetParams");
  }
  void replay(cudaStream_t stream, decode::step_values& now) {
    for (std::size_t k = 0; k < execs.size(); ++k) {
      bench::check(cudaGraphLaunch(execs[k], stream), "cudaGraphLaunch");
      if (k < islands.size()) {
        islands[k](stream, now);
      }
    }
  }
};

/// decode::forward()'s capture interface, by hand: a raw capture per segment, ended and
/// instantiated at each island, over the static buffers.
class raw_capture {
public:
  raw_capture(const decode::static_buffers& buffers, cudaStream_t stream, raw_bucket& into)
      : buffers_(&buffers), stream_(stream), into_(&into) {
    begin();
  }
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  template <class T>
  [[nodiscard]] T* allocate(std::size_t count) {
    return buffers_->take(taken_++, count);
  }
  template <class T>
  void deallocate(T* /*pointer*/) const noexcept {}
  template <class Island>
  void eager(Island&& work) {
    end();
    into_->islands.emplace_back(std::forward<Island>(work));
    begin();
  }
  /// Ends the last segment and finds segment 0's embedding node (the one kernel of 256 threads).
  void finish() {
    end();
    cudaGraph_t first = into_->graphs.front();
    std::size_t count = 0;
    bench::check(cudaGraphGetNodes(first, nullptr, &count), "cudaGraphGetNodes");
    std::vector<cudaGraphNode_t> nodes(count);
    bench::check(cudaGraphGetNodes(first, nodes.data(), &count), "cudaGraphGetNodes");
    for (cudaGraphNode_t node : nodes) {
      cudaKernelNodeParams params{};
      cudaGraphNodeType type{};
      bench::check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
      if (type != cudaGraphNodeTypeKernel) {
        continue;
      }
      bench::check(cudaGraphKernelNodeGetParams(node, &params), "cudaGraphKernelNodeGetParams");
      if (params.blockDim.x == static_cast<unsigned>(decode::hidden)) {
        into_->tokens = *static_cast<const int**>(params.kernelParams[0]);
        into_->table = *static_cast<const float**>(params.kernelParams[1]);
        into_->x = *static_cast<float**>(params.kernelParams[2]);
        into_->embed_node = node;
        into_->embed_params = params;
        into_->embed_params.kernelParams = into_->args.data();
        into_->embed_params.extra = nullptr;
      }
    }
    if (into_->embed_node == nullptr) {
      std::fprintf(stderr, "bench_decode_step: no embedding node in segment 0\n");
      std::exit(EXIT_FAILURE);
    }
  }

private:
  void begin() {
    bench::check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                 "cudaStreamBeginCapture");
  }
  void end() {
    cudaGraph_t graph = nullptr;
    bench::check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    bench::check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    into_->graphs.push_back(graph);
    into_->execs.push_back(exec);
  }

  const decode::static_buffers* buffers_;
  cudaStream_t stream_;
  raw_bucket* into_;
  std::size_t taken_ = 0;
};

template <class Family = decode_family>
Family capture_family(cudaStream_t stream, const decode::model& m, const int* tokens, float* logits,
                      graphcap::family_options<std::size_t> options = {}) {
  Family family{std::move(options)};
  const auto captured =
      family.capture_all(decode::buckets(), stream,
                         [m, tokens, logits](std::size_t batch, typename Family::scope& cap) {
                           decode::forward(cap, batch, m, tokens, logits);
                         });
  captured.rethrow_first_failure();
  return family;
}

} // namespace

int main() {
  if (!bench::device_present("bench_decode_step")) {
    return 0;
  }
  bench::owned_stream stream;
  bench::owned_stream capture_stream;
  float* weights = decode::make_weights(stream);
  decode::model m = decode::make_model(weights, stream);
  std::array<int*, ring> tokens{};
  for (int*& buffer : tokens) {
    bench::check(cudaMalloc(reinterpret_cast<void**>(&buffer), decode::max_batch * sizeof(int)),
                 "cudaMalloc");
  }
  float* logits = nullptr;
  float* raw_logits = nullptr;
  int* copied_tokens = nullptr; // the copies arm's captured token buffer
  bench::check(cudaMalloc(reinterpret_cast<void**>(&logits),
                          decode::max_batch * decode::vocab * sizeof(float)),
               "cudaMalloc");
  bench::check(cudaMalloc(reinterpret_cast<void**>(&raw_logits),
                          decode::max_batch * decode::vocab * sizeof(float)),
               "cudaMalloc");
  bench::check(
      cudaMalloc(reinterpret_cast<void**>(&copied_tokens), decode::max_batch * sizeof(int)),
      "cudaMalloc");

  // Memory, each design in a phase of its own: the drop of cudaMemGetInfo's free bytes.
  const std::size_t before_family = free_bytes();
  decode_family family = capture_family(stream, m, tokens[0], logits);
  for (const std::size_t key : family.keys()) { // what a first launch would take, taken now
    const step_graph& graph = *family.find(key);
    for (std::size_t k = 0; k < graph.segment_count(); ++k) {
      bench::check(cudaGraphUpload(graph.segment(k).raw_exec(), stream), "cudaGraphUpload");
    }
  }
  const std::size_t family_bytes = before_family - free_bytes();
  const std::size_t pool_reserved = family.pool().statistics().reserved_bytes;
  const std::size_t before_raw = free_bytes();
  auto raw_buffers = std::make_unique<decode::static_buffers>();
  const std::size_t after_buffers = free_bytes();
  std::vector<std::unique_ptr<raw_bucket>> raw; // in the order of decode::buckets()
  for (const std::size_t batch : decode::buckets()) {
    raw.push_back(std::make_unique<raw_bucket>());
    raw_capture cap{*raw_buffers, capture_stream, *raw.back()};
    decode::forward(cap, batch, m, tokens[0], raw_logits);
    cap.finish();
    for (cudaGraphExec_t exec : raw.back()->execs) {
      bench::check(cudaGraphUpload(exec, stream), "cudaGraphUpload");
    }
  }
  const std::size_t raw_executable_bytes = after_buffers - free_bytes();
  const std::size_t raw_buffer_bytes = before_raw - after_buffers;
  // One executable per segment topology (#45 item 5): the same family, its segments sharing
  // executables position by position; its executables against one per bucket's.
  const std::size_t before_shared = free_bytes();
  decode_family shared = capture_family(stream, m, tokens[0], logits, {.one_executable = true});
  const std::size_t shared_bytes = before_shared - free_bytes();
  const std::vector<std::size_t> buckets = decode::buckets();
  const auto raw_of = [&](std::size_t bucket) -> raw_bucket& {
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      if (buckets[i] == bucket) {
        return *raw[i];
      }
    }
    std::exit(EXIT_FAILURE);
  };

  decode_family copied = capture_family(stream, m, copied_tokens, logits);
  // The executables alone are patched (the templates keep the capture's addresses), as the raw
  // design patches its executables and leaves its graphs: the same work per move.
  graphcap::rebinder inputs{family, {tokens[0]}, graphcap::template_patch::deferred};
  const int* current = tokens[0];
  lean_family lean = capture_family<lean_family>(stream, m, tokens[0], logits);
  graphcap::rebinder lean_inputs{lean, {tokens[0]}, graphcap::template_patch::deferred};
  const int* lean_current = tokens[0];

  // One step of each design from the same state: bit-identical logits.
  {
    decode::upload_tokens(tokens[1], 0, stream);
    decode::step_values now{decode::prompt};
    inputs.rebind(current, tokens[1]);
    current = tokens[1];
    inputs.sync(decode::max_batch);
    family.find(decode::max_batch)->replay(stream, now);
    raw_bucket& largest = raw_of(decode::max_batch);
    largest.point_tokens(tokens[1]);
    largest.replay(stream, now);
    bench::check(cudaGetLastError(), "kernel launch");
  }
  const std::vector<float> from_family = decode::read_logits(logits, decode::max_batch, stream);
  const std::vector<float> from_raw = decode::read_logits(raw_logits, decode::max_batch, stream);
  const bool same =
      std::memcmp(from_family.data(), from_raw.data(), from_family.size() * sizeof(float)) == 0;

  int step = -1; // each arm's block replays steps 0, 1, ... (the same batches and lengths)
  std::size_t bucket = 1;
  const int* input = tokens[0];
  decode::step_values now{};
  const auto next_step = [&] { // outside the timing: the host's side of the next step
    ++step;
    bucket = *family.find_at_least(decode::batch_of(step));
    int* const buffer = tokens[static_cast<std::size_t>(step) % ring];
    decode::upload_tokens(buffer, step, stream);
    bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    input = buffer;
    now.length = decode::prompt + step % 64;
  };
  // 256 steps: the batches (1 + 37 step mod 128) and lengths (step mod 64) each run whole periods,
  // and every arm times the same 256 steps (until session 19 the arms timed consecutive windows of
  // 200 steps, other batches each: not the same work).
  const int steps = 256;
  const auto from_the_start = [&] { step = -1; };
  std::vector<double> raw_times;
  std::vector<double> rebound_times;
  std::vector<double> copied_times;
  std::vector<double> lean_times;
  std::vector<double> copy_calls;
  std::vector<double> rebind_calls;
  int flip = 0;
  bench::interleave(
      bench::scaled(5), 1,
      {[&](bool record) {
         from_the_start();
         bench::synchronized_steps(
             stream, steps, raw_times, record,
             [&] {
               raw_bucket& chosen = raw_of(bucket);
               chosen.point_tokens(input);
               chosen.replay(stream, now);
             },
             next_step);
       },
       [&](bool record) {
         from_the_start();
         bench::synchronized_steps(
             stream, steps, rebound_times, record,
             [&] {
               if (input != current) {
                 inputs.rebind(current, input);
                 current = input;
               }
               inputs.sync(bucket);
               family.find(bucket)->replay(stream, now);
             },
             next_step);
       },
       [&](bool record) {
         from_the_start();
         bench::synchronized_steps(
             stream, steps, lean_times, record,
             [&] {
               if (input != lean_current) {
                 lean_inputs.rebind(lean_current, input);
                 lean_current = input;
               }
               lean_inputs.sync(bucket);
               lean.find(bucket)->replay(stream, now);
             },
             next_step);
       },
       [&](bool record) {
         from_the_start();
         bench::synchronized_steps(
             stream, steps, copied_times, record,
             [&] {
               bench::check(cudaMemcpyAsync(copied_tokens, input, decode::max_batch * sizeof(int),
                                            cudaMemcpyDeviceToDevice, stream),
                            "cudaMemcpyAsync");
               copied.find(bucket)->replay(stream, now);
             },
             next_step);
       },
       bench::per_call_arm(copy_calls, stream, 1000,
                           [&] {
                             bench::check(cudaMemcpyAsync(copied_tokens, tokens[flip ^= 1],
                                                          decode::max_batch * sizeof(int),
                                                          cudaMemcpyDeviceToDevice, stream),
                                          "cudaMemcpyAsync");
                           }),
       bench::per_call_arm(rebind_calls, stream, 1000, [&] {
         const int* to = tokens[flip ^= 1];
         if (to != current) {
           inputs.rebind(current, to);
           current = to;
         }
         inputs.sync(decode::max_batch);
       })});

  // A sleep between bursts (#45 goal 3): the pool's pages and every bucket's executables go;
  // what cudaMemGetInfo gets back against what the family took; then the wake, every bucket
  // instantiated again from its template, and one step against the raw design.
  graphcap::sleepable_pool_handle pool{family.pool()};
  const std::size_t awake = free_bytes();
  pool.sleep(graphcap::pool::backup::none);
  family.release_executables();
  const std::size_t asleep = free_bytes();
  // Then the driver pressed for the executables' cached pieces (executable_memory::give_back).
  family.release_executables(graphcap::executable_memory::give_back);
  const std::size_t squeezed = free_bytes();
  pool.wake();
  family.restore_executables();
  bool same_after_wake = false;
  {
    decode::upload_tokens(tokens[2], 1, stream);
    decode::step_values after{decode::prompt + 1};
    inputs.rebind(current, tokens[2]);
    current = tokens[2];
    inputs.replay_at_least(decode::max_batch, stream, after);
    raw_bucket& largest = raw_of(decode::max_batch);
    largest.point_tokens(tokens[2]);
    largest.replay(stream, after);
    bench::check(cudaGetLastError(), "kernel launch");
    const std::vector<float> woken = decode::read_logits(logits, decode::max_batch, stream);
    const std::vector<float> by_hand = decode::read_logits(raw_logits, decode::max_batch, stream);
    same_after_wake = std::memcmp(woken.data(), by_hand.data(), woken.size() * sizeof(float)) == 0;
  }
  const std::size_t released = asleep > awake ? asleep - awake : 0;
  const std::size_t released_given = squeezed > awake ? squeezed - awake : 0;

  bench::report report("bench_decode_step",
                       "decode step of an 8-layer model, 19 buckets, 9 segments + 8 attention "
                       "islands, synchronized: host time per step (us)");
  report.add("decode step", "19 buckets", "raw CUDA graphs", "us", raw_times);
  report.add("decode step", "19 buckets", "graphcap, rebound", "us", rebound_times);
  report.add("decode step", "19 buckets", "graphcap, copied", "us", copied_times);
  report.add("decode step", "19 buckets", "graphcap, rebound, liveness off", "us", lean_times);
  report.add("input move", "1 input", "cudaMemcpyAsync", "us", copy_calls);
  report.add("input move", "1 input", "rebind + sync", "us", rebind_calls);
  const double raw_total = static_cast<double>(raw_buffer_bytes + raw_executable_bytes) / mib;
  const double family_total = static_cast<double>(family_bytes) / mib;
  report.add("memory", "decode family", "raw: static buffers + executables", "MiB", {raw_total});
  report.add("memory", "decode family", "graphcap: pool + executables", "MiB", {family_total});
  report.add("memory", "decode family", "graphcap, one executable per topology", "MiB",
             {static_cast<double>(shared_bytes) / mib});
  report.add("memory", "executables", "graphcap: one per bucket and segment", "MiB",
             {static_cast<double>(family.executable_bytes()) / mib});
  report.add("memory", "executables", "graphcap: one per segment topology", "MiB",
             {static_cast<double>(shared.executable_bytes()) / mib});
  report.add("memory", "sleep", "released by sleep + release_executables", "MiB",
             {static_cast<double>(released) / mib});
  report.add("memory", "sleep", "released, driver's cache given back", "MiB",
             {static_cast<double>(released_given) / mib});
  char line[512];
  std::snprintf(line, sizeof line,
                "memory (cudaMemGetInfo drops): graphcap family %.2f MiB (pool reserves %.2f MiB, "
                "executables measured by the family %.2f MiB, %zu executables); raw %.2f MiB "
                "(static buffers %.2f MiB measured, %.2f MiB asked; executables %.2f MiB, %zu)",
                family_total, static_cast<double>(pool_reserved) / mib,
                static_cast<double>(family.executable_bytes()) / mib, family.executables(),
                raw_total, static_cast<double>(raw_buffer_bytes) / mib,
                static_cast<double>(decode::static_buffers::bytes()) / mib,
                static_cast<double>(raw_executable_bytes) / mib, buckets.size() * 9);
  report.note(line);
  report.note(same ? "one step of each design from the same state: bit-identical logits"
                   : "one step of each design from the same state: logits DIFFER");
  std::snprintf(line, sizeof line,
                "one executable per segment topology: %zu executables of %.2f MiB (measured at "
                "instantiation) against %zu of %.2f MiB, %.3fx; its cudaMemGetInfo drop %.2f MiB",
                shared.executables(), static_cast<double>(shared.executable_bytes()) / mib,
                family.executables(), static_cast<double>(family.executable_bytes()) / mib,
                family.executable_bytes() == 0 ? 0.0
                                               : static_cast<double>(shared.executable_bytes()) /
                                                     static_cast<double>(family.executable_bytes()),
                static_cast<double>(shared_bytes) / mib);
  report.note(line);
  std::snprintf(line, sizeof line,
                "sleep (pool without backup, executables released): cudaMemGetInfo gained %.2f "
                "MiB of the family's %.2f MiB (%.1f%%; the pool reserved %.2f MiB), %.2f MiB "
                "(%.1f%%) with the driver's cache given back; the first step after the wake %s",
                static_cast<double>(released) / mib, family_total,
                family_bytes == 0
                    ? 0.0
                    : 100.0 * static_cast<double>(released) / static_cast<double>(family_bytes),
                static_cast<double>(pool_reserved) / mib, static_cast<double>(released_given) / mib,
                family_bytes == 0 ? 0.0
                                  : 100.0 * static_cast<double>(released_given) /
                                        static_cast<double>(family_bytes),
                same_after_wake ? "bit-identical to the raw design" : "DIFFERS");
  report.note(line);
  report.finish();

  raw.clear();
  raw_buffers.reset();
  copied.clear();
  lean.clear();
  shared.clear();
  family.clear();
  for (int* buffer : tokens) {
    bench::check(cudaFree(buffer), "cudaFree");
  }
  bench::check(cudaFree(copied_tokens), "cudaFree");
  bench::check(cudaFree(raw_logits), "cudaFree");
  bench::check(cudaFree(logits), "cudaFree");
  decode::free_cache(m);
  bench::check(cudaFree(weights), "cudaFree");
  return same && same_after_wake ? 0 : 1;
}
