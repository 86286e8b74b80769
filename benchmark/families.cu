// bench_families: a shape family of 64 batch sizes (1, 16, 24, ..., 512) of a 200-kernel step
// whose temporaries grow with the batch (activations of batch x 1024 floats, each freed once the
// next layer has read it, the output freed last: the next graph's step reuses it, the shared
// pool's rule). It measures:
//  - capture_all(): the whole family, largest first (graphcap::graph_family), against one
//    graphcap::graph per key with private pools, captured in a loop;
//  - the pool bytes reserved: the family, the family with exact size classes
//    (reuse_larger_blocks off), private pools (the sum), and the largest size alone;
//  - lookup: find_at_least() for random requests among 64 keys (ns per call);
//  - one-executable mode: a switch (set-params on the nodes that differ, then the replay) per
//    node, against cudaGraphExecUpdate + cudaGraphLaunch written by hand, and a replay of a graph
//    kept per key;
//  - the patch switch against set-params written by hand over the same changed nodes (+ launch),
//    per changed node, back to back and with the device idle before each switch (session 24),
//    and the hand-written switch split into its set-params calls and the launch after them;
//    and in a family whose keys differ in one kernel, the cost per unchanged
//    node (graphcap's switch less the hand-written one, over the nodes it compared and skipped);
//  - device memory: what capture_all() of the 64 keys takes from the device (cudaMemGetInfo),
//    one executable per key against one per topology, with the executables each holds; in this
//    process (listed) and each in a fresh process of its own (this binary run again with
//    --fresh-memory: the goal's figure, session 23).
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>

#include "harness.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

/// One layer: out = in + 1 over n floats.
__global__ void layer_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    out[i] = in[i] + 1.0F;
  }
}

constexpr int layers = 200;
constexpr int hidden = 1024;
constexpr double mib = 1024.0 * 1024.0;

std::vector<std::size_t> batch_sizes() {
  std::vector<std::size_t> sizes{1};
  for (std::size_t batch = 16; batch <= 512; batch += 8) {
    sizes.push_back(batch);
  }
  return sizes; // 64 sizes
}

/// The step for `batch`: a memset, then `layers` kernels, each writing a new activation from the
/// last one, which it then frees.
template <class Scope>
void step(std::size_t batch, Scope& cap) {
  const int n = static_cast<int>(batch) * hidden;
  float* activation = cap.template allocate<float>(static_cast<std::size_t>(n));
  bench::check(
      cudaMemsetAsync(activation, 0, sizeof(float) * static_cast<std::size_t>(n), cap.stream()),
      "cudaMemsetAsync");
  for (int layer = 0; layer < layers; ++layer) {
    float* next = cap.template allocate<float>(static_cast<std::size_t>(n));
    layer_kernel<<<(n + 255) / 256, 256, 0, cap.stream()>>>(activation, next, n);
    cap.deallocate(activation);
    activation = next;
  }
  cap.deallocate(activation);
}

using family = graphcap::graph_family<>;

std::unique_ptr<family> capture_family(const std::vector<std::size_t>& keys, cudaStream_t stream,
                                       graphcap::family_options<std::size_t> options = {}) {
  options.progress_line = false;
  auto made = std::make_unique<family>(std::move(options));
  const auto result = made->capture_all(
      keys, stream, [](std::size_t batch, family::scope& cap) { step(batch, cap); });
  if (!result.complete()) {
    std::fprintf(stderr, "bench_families: capture_all failed: %s\n",
                 result.failures.empty() ? "a budget" : result.failures.front().message.c_str());
    std::exit(EXIT_FAILURE);
  }
  return made;
}

/// The hand-written patch switch: an executable of templates[0], and for each node that differs
/// between the two templates (kernel arguments of layer_kernel, shapes, memset widths, the
/// completion markers' events) each template's parameters, read once; switch(t) sets them with
/// cudaGraphExec*SetParams, as a user would write it by hand.
class hand_patch {
public:
  explicit hand_patch(const cudaGraph_t (&templates)[2]) {
    bench::check(cudaGraphInstantiate(&exec_, templates[0], 0), "cudaGraphInstantiate");
    std::vector<cudaGraphNode_t> nodes[2];
    for (int t = 0; t < 2; ++t) {
      std::size_t count = 0;
      bench::check(cudaGraphGetNodes(templates[t], nullptr, &count), "cudaGraphGetNodes");
      nodes[t].resize(count);
      bench::check(cudaGraphGetNodes(templates[t], nodes[t].data(), &count), "cudaGraphGetNodes");
    }
    for (std::size_t i = 0; i < nodes[0].size(); ++i) {
      cudaGraphNodeType type{};
      bench::check(cudaGraphNodeGetType(nodes[0][i], &type), "cudaGraphNodeGetType");
      changed each{nodes[0][i], type};
      for (int t = 0; t < 2; ++t) {
        if (type == cudaGraphNodeTypeKernel) {
          bench::check(cudaGraphKernelNodeGetParams(nodes[t][i], &each.kernel[t]), "get kernel");
        } else if (type == cudaGraphNodeTypeMemset) {
          bench::check(cudaGraphMemsetNodeGetParams(nodes[t][i], &each.set[t]), "get memset");
        } else if (type == cudaGraphNodeTypeEventRecord) {
          bench::check(cudaGraphEventRecordNodeGetEvent(nodes[t][i], &each.event[t]), "get event");
        }
      }
      if (differs(each)) {
        changed_.push_back(each);
      }
    }
  }
  hand_patch(const hand_patch&) = delete;
  hand_patch& operator=(const hand_patch&) = delete;
  ~hand_patch() { static_cast<void>(cudaGraphExecDestroy(exec_)); }

  /// Sets every changed node to template `t`'s parameters.
  void switch_to(std::size_t t) {
    for (const changed& each : changed_) {
      if (each.type == cudaGraphNodeTypeKernel) {
        bench::check(cudaGraphExecKernelNodeSetParams(exec_, each.node, &each.kernel[t]),
                     "cudaGraphExecKernelNodeSetParams");
      } else if (each.type == cudaGraphNodeTypeMemset) {
        bench::check(cudaGraphExecMemsetNodeSetParams(exec_, each.node, &each.set[t]),
                     "cudaGraphExecMemsetNodeSetParams");
      } else {
        bench::check(cudaGraphExecEventRecordNodeSetEvent(exec_, each.node, each.event[t]),
                     "cudaGraphExecEventRecordNodeSetEvent");
      }
    }
  }
  [[nodiscard]] cudaGraphExec_t exec() const noexcept { return exec_; }
  [[nodiscard]] std::size_t changed_nodes() const noexcept { return changed_.size(); }

private:
  struct changed {
    cudaGraphNode_t node = nullptr;
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    cudaKernelNodeParams kernel[2]{};
    cudaMemsetParams set[2]{};
    cudaEvent_t event[2]{};
  };
  /// layer_kernel's and fixed_kernel's arguments: (pointer, pointer, int).
  static bool differs(const changed& each) {
    if (each.type == cudaGraphNodeTypeKernel) {
      const cudaKernelNodeParams& a = each.kernel[0];
      const cudaKernelNodeParams& b = each.kernel[1];
      return a.gridDim.x != b.gridDim.x || a.blockDim.x != b.blockDim.x ||
             std::memcmp(a.kernelParams[0], b.kernelParams[0], sizeof(void*)) != 0 ||
             std::memcmp(a.kernelParams[1], b.kernelParams[1], sizeof(void*)) != 0 ||
             std::memcmp(a.kernelParams[2], b.kernelParams[2], sizeof(int)) != 0;
    }
    if (each.type == cudaGraphNodeTypeMemset) {
      return each.set[0].dst != each.set[1].dst || each.set[0].width != each.set[1].width;
    }
    return each.event[0] != each.event[1];
  }

  cudaGraphExec_t exec_ = nullptr;
  std::vector<changed> changed_;
};

/// A step whose nodes are the same for every key but one kernel: `layers` kernels over fixed
/// buffers, then one over the key's batch (the per-unchanged-node case).
void fixed_step(std::size_t batch, cudaStream_t stream, float* a, float* b) {
  constexpr int n = 64 * hidden;
  for (int layer = 0; layer < layers; ++layer) {
    layer_kernel<<<(n + 255) / 256, 256, 0, stream>>>(layer % 2 == 0 ? a : b,
                                                      layer % 2 == 0 ? b : a, n);
  }
  const int m = static_cast<int>(batch) * hidden;
  layer_kernel<<<(m + 255) / 256, 256, 0, stream>>>(a, b, m);
}

} // namespace

/// The device memory capture_all() of `keys` takes in a fresh process (argv: `--fresh-memory
/// single` or `--fresh-memory per-key`), printed as "fresh: <device bytes> <executable bytes>":
/// in the benchmark's own process the driver's cache of earlier executables serves the family
/// measured second, and one executable of about 200 nodes fits in the room of its last 2 MiB
/// piece (the 0.0 MiB of sessions 19-23), so each mode is measured in a context of its own.
int fresh_memory(const std::vector<std::size_t>& keys, bool single) {
  bench::check(cudaFree(nullptr), "cudaFree"); // the context, before the first figure
  const bench::owned_stream stream;
  const auto free_bytes = [&] { return bench::free_bytes_after(stream); };
  const std::size_t before = free_bytes();
  graphcap::family_options<std::size_t> options{.one_executable = single};
  const auto made = capture_family(keys, stream, std::move(options));
  const std::size_t after = free_bytes();
  std::printf("fresh: %zu %zu\n", before > after ? before - after : std::size_t{0},
              made->executable_bytes());
  return 0;
}

/// Runs this binary with `--fresh-memory <mode>`: {device bytes, executable bytes}, or {-1, -1}
/// where the child failed.
std::pair<double, double> fresh_memory_of(const char* self, const char* mode) {
  const std::string command = std::string("\"") + self + "\" --fresh-memory " + mode;
  FILE* child = popen(command.c_str(), "r");
  double device = -1;
  double executables = -1;
  if (child != nullptr) {
    char line[256];
    while (std::fgets(line, sizeof line, child) != nullptr) {
      unsigned long long d = 0;
      unsigned long long e = 0;
      if (std::sscanf(line, "fresh: %llu %llu", &d, &e) == 2) {
        device = static_cast<double>(d);
        executables = static_cast<double>(e);
      }
    }
    if (pclose(child) != 0) {
      device = executables = -1;
    }
  }
  return {device, executables};
}

int main(int argc, char** argv) {
  if (!bench::device_present("bench_families")) {
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--fresh-memory") == 0) {
    return fresh_memory(batch_sizes(), std::strcmp(argv[2], "single") == 0);
  }
  const bench::owned_stream stream;
  const std::vector<std::size_t> keys = batch_sizes();
  bench::report report("bench_families",
                       "a family of 64 batch sizes (1..512) of a 200-kernel step");

  // ---- capture time and pool bytes ------------------------------------------------------------
  std::vector<double> family_ms;
  std::vector<double> private_ms;
  std::size_t family_bytes = 0;
  std::size_t private_bytes = 0;
  std::size_t nodes = 0;
  bench::interleave(bench::scaled(5), 1,
                    {[&](bool record) {
                       const auto start = bench::steady::now();
                       const auto made = capture_family(keys, stream);
                       const double ms = bench::micros(start, bench::steady::now()) / 1000.0;
                       if (record) {
                         family_ms.push_back(ms);
                         family_bytes = made->pool().statistics().reserved_bytes;
                         nodes = made->statistics(keys.back())->nodes;
                       }
                     },
                     [&](bool record) {
                       const auto start = bench::steady::now();
                       std::vector<graphcap::graph> graphs(keys.size());
                       std::size_t bytes = 0;
                       for (std::size_t i = 0; i < keys.size(); ++i) {
                         graphs[i].capture(
                             stream, [&](graphcap::graph::scope& cap) { step(keys[i], cap); });
                         bytes += graphs[i].pool_statistics().reserved_bytes;
                       }
                       const double ms = bench::micros(start, bench::steady::now()) / 1000.0;
                       if (record) {
                         private_ms.push_back(ms);
                         private_bytes = bytes;
                       }
                     }});
  report.add("capture all 64 keys", layers, "shape_family capture_all", "ms", family_ms);
  report.add("capture all 64 keys", layers, "graphcap::graph per key", "ms", private_ms);

  const std::size_t exact_bytes = capture_family(keys, stream, {.reuse_larger_blocks = false})
                                      ->pool()
                                      .statistics()
                                      .reserved_bytes;
  const std::size_t largest_bytes =
      capture_family({keys.back()}, stream)->pool().statistics().reserved_bytes;
  report.add("pool reserved", 64, "largest size alone", "MiB",
             {static_cast<double>(largest_bytes) / mib});
  report.add("pool reserved", 64, "shape_family", "MiB", {static_cast<double>(family_bytes) / mib});
  report.add("pool reserved", 64, "shape_family, exact size classes", "MiB",
             {static_cast<double>(exact_bytes) / mib});
  report.add("pool reserved", 64, "private pools (sum)", "MiB",
             {static_cast<double>(private_bytes) / mib});
  report.note(
      "pool: shape_family / largest alone = " +
      std::to_string(static_cast<double>(family_bytes) / static_cast<double>(largest_bytes)) +
      " (goal <= 1.2)");

  // ---- lookup -------------------------------------------------------------------------------
  const auto looked_up = capture_family(keys, stream);
  std::vector<std::size_t> requests(4096);
  std::mt19937 random{18};
  std::uniform_int_distribution<std::size_t> request_size{1, 512};
  for (std::size_t& request : requests) {
    request = request_size(random);
  }
  std::vector<double> lookup_ns;
  std::size_t checksum = 0;
  bench::interleave(bench::scaled(30), 3, {[&](bool record) {
                      constexpr int calls = 1 << 20;
                      const auto start = bench::steady::now();
                      for (int i = 0; i < calls; ++i) {
                        checksum +=
                            *looked_up->find_at_least(requests[static_cast<std::size_t>(i) & 4095]);
                      }
                      const double ns = bench::micros(start, bench::steady::now()) * 1000.0 / calls;
                      if (record) {
                        lookup_ns.push_back(ns);
                      }
                    }});
  report.add("lookup find_at_least", 64, "shape_family", "ns", lookup_ns);

  // ---- device memory: one executable per key, against one per topology ------------------------
  const auto free_bytes = [&] { return bench::free_bytes_after(stream); };
  const std::size_t free_at_start = free_bytes();
  const auto kept = capture_family(keys, stream);
  const std::size_t free_per_key = free_bytes();
  graphcap::family_options<std::size_t> single_options{.one_executable = true};
  const auto single = capture_family(keys, stream, std::move(single_options));
  const std::size_t free_single = free_bytes();
  const auto taken = [](std::size_t before, std::size_t after) {
    return static_cast<double>(before > after ? before - after : 0) / mib;
  };
  report.add("device memory", 64, "one executable per key", "MiB",
             {taken(free_at_start, free_per_key)});
  report.add("device memory", 64, "one executable per topology", "MiB",
             {taken(free_per_key, free_single)});
  // The same in a fresh process each (see fresh_memory): the figure the goal is judged on.
  const auto fresh_per_key = fresh_memory_of(argv[0], "per-key");
  const auto fresh_single = fresh_memory_of(argv[0], "single");
  if (fresh_per_key.first < 0 || fresh_single.first < 0) {
    std::fprintf(stderr, "bench_families: a fresh-process memory measure failed\n");
    return EXIT_FAILURE;
  }
  report.add("device memory, fresh process", 64, "one executable per key", "MiB",
             {fresh_per_key.first / mib});
  report.add("device memory, fresh process", 64, "one executable per topology", "MiB",
             {fresh_single.first / mib});
  report.add("executable memory, fresh process", 64, "one executable per key", "MiB",
             {fresh_per_key.second / mib});
  report.add("executable memory, fresh process", 64, "one executable per topology", "MiB",
             {fresh_single.second / mib});
  report.add("executables", 64, "one executable per key", "count",
             {static_cast<double>(kept->executables())});
  report.add("executables", 64, "one executable per topology", "count",
             {static_cast<double>(single->executables())});
  report.note("device memory (capture_all, pool + executables): one per topology " +
              std::to_string(taken(free_per_key, free_single)) + " MiB, one per key " +
              std::to_string(taken(free_at_start, free_per_key)) +
              " MiB (goal <= 0.2x); executables measured at instantiation " +
              std::to_string(static_cast<double>(single->executable_bytes()) / mib) + " / " +
              std::to_string(static_cast<double>(kept->executable_bytes()) / mib) + " MiB");

  // ---- one executable: a switch per replay, against the raw update and a kept graph's replay --
  std::vector<double> switch_us;
  std::vector<double> raw_us;
  std::vector<double> kept_us;
  // The hand-written switch: the same two kept templates updated into one executable of its own.
  const cudaGraph_t templates[2] = {kept->find(keys[62])->raw_graph(),
                                    kept->find(keys[63])->raw_graph()};
  cudaGraphExec_t raw_exec = nullptr;
  bench::check(cudaGraphInstantiate(&raw_exec, templates[0], 0), "cudaGraphInstantiate");
  std::size_t updated = 0;
  std::size_t switches = 0;
  constexpr int calls = 20;
  std::size_t turn = 0;
  bench::interleave(
      bench::scaled(10), 1,
      {bench::per_call_arm(raw_us, stream, calls,
                           [&] {
                             cudaGraphExecUpdateResultInfo info{};
                             bench::check(
                                 cudaGraphExecUpdate(raw_exec, templates[turn++ % 2], &info),
                                 "cudaGraphExecUpdate");
                             bench::check(cudaGraphLaunch(raw_exec, stream), "cudaGraphLaunch");
                           }),
       bench::per_call_arm(switch_us, stream, calls,
                           [&] {
                             single->replay_at_least(keys[(turn++ % 2) == 0 ? 62 : 63], stream);
                             ++switches;
                             updated += single->last_update().updated() ? 1 : 0;
                           }),
       bench::per_call_arm(kept_us, stream, calls, [&] {
         kept->replay_at_least(keys[(turn++ % 2) == 0 ? 62 : 63], stream);
       })});
  // The same switches with the device idle before each (the stream synchronized, untimed): the
  // update's own cost, apart from any wait for queued work. On the H200 (session 15) it read the
  // same as back to back (1.15-1.47 us per node, raw and graphcap alike): cudaGraphExecUpdate of
  // 201 nodes whose launch shapes and addresses all change is itself that slow, and does not wait.
  std::vector<double> raw_idle_us;
  std::vector<double> switch_idle_us;
  const auto idle_arm = [&](std::vector<double>& samples, auto call) {
    return [&samples, call, &stream](bool record) {
      double total = 0;
      for (int i = 0; i < calls; ++i) {
        bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        const auto start = bench::steady::now();
        call();
        total += bench::micros(start, bench::steady::now());
      }
      if (record) {
        samples.push_back(total / calls);
      }
    };
  };
  bench::interleave(
      bench::scaled(10), 1,
      {idle_arm(raw_idle_us,
                [&] {
                  cudaGraphExecUpdateResultInfo info{};
                  bench::check(cudaGraphExecUpdate(raw_exec, templates[turn++ % 2], &info),
                               "cudaGraphExecUpdate");
                  bench::check(cudaGraphLaunch(raw_exec, stream), "cudaGraphLaunch");
                }),
       idle_arm(switch_idle_us,
                [&] { single->replay_at_least(keys[(turn++ % 2) == 0 ? 62 : 63], stream); })});
  for (std::vector<double>* samples :
       {&switch_us, &raw_us, &kept_us, &raw_idle_us, &switch_idle_us}) {
    for (double& sample : *samples) {
      sample /= static_cast<double>(nodes);
    }
  }
  report.add("switch per node", static_cast<long long>(nodes), "raw update + launch", "us", raw_us);
  report.add("switch per node", static_cast<long long>(nodes), "one executable (patch switch)",
             "us", switch_us);
  report.add("switch per node", static_cast<long long>(nodes), "graph per key (replay)", "us",
             kept_us);
  report.add("switch per node, device idle", static_cast<long long>(nodes), "raw update + launch",
             "us", raw_idle_us);
  report.add("switch per node, device idle", static_cast<long long>(nodes),
             "one executable (patch switch)", "us", switch_idle_us);
  report.note(
      "one executable: " + std::to_string(updated) + " of " + std::to_string(switches) +
      " switches updated in place; pool " +
      std::to_string(static_cast<double>(single->pool().statistics().reserved_bytes) / mib) +
      " MiB");

  // ---- the patch switch against set-params written by hand, over the same changed nodes --------
  // Keys 62 and 63 of the family: every kernel's grid and arguments differ, as do the memset and
  // the completion marker; both arms then launch. Per changed node.
  std::vector<double> hand_us;
  std::vector<double> patch_us;
  hand_patch by_hand(templates);
  bench::interleave(bench::scaled(10), 1,
                    {bench::per_call_arm(hand_us, stream, calls,
                                         [&] {
                                           by_hand.switch_to(turn++ % 2);
                                           bench::check(cudaGraphLaunch(by_hand.exec(), stream),
                                                        "cudaGraphLaunch");
                                         }),
                     bench::per_call_arm(patch_us, stream, calls, [&] {
                       single->replay_at_least(keys[(turn++ % 2) == 0 ? 62 : 63], stream);
                     })});
  const double changed_all = static_cast<double>(by_hand.changed_nodes());
  for (std::vector<double>* samples : {&hand_us, &patch_us}) {
    for (double& sample : *samples) {
      sample /= changed_all;
    }
  }
  report.add("patch switch per changed node", static_cast<long long>(by_hand.changed_nodes()),
             "set-params by hand + launch", "us", hand_us);
  report.add("patch switch per changed node", static_cast<long long>(by_hand.changed_nodes()),
             "graphcap patch switch (replay_at_least)", "us", patch_us);
  // The same switches with the device idle before each (synchronized, untimed): the switch's own
  // host cost. Back to back, a set-params call may wait for the replay before it, so the rows
  // above can read the device's time per node rather than the switch's (session 24, an H200:
  // 2.1-2.6 us per changed node there, against the 0.31-0.33 us of one set-params #47 quotes).
  // Session 25 (an H100): idle or not, 2.3-2.9 us per changed node by hand. The third arm splits
  // the hand-written switch into its set-params calls and the launch after them, timed apart,
  // to tell which of the two a changed node's cost goes to.
  std::vector<double> hand_idle_us;
  std::vector<double> patch_idle_us;
  std::vector<double> set_alone_us;
  std::vector<double> launch_after_us;
  const auto split_arm = [&](bool record) {
    double set_total = 0;
    double launch_total = 0;
    for (int i = 0; i < calls; ++i) {
      bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      const auto start = bench::steady::now();
      by_hand.switch_to(turn++ % 2);
      const auto set = bench::steady::now();
      bench::check(cudaGraphLaunch(by_hand.exec(), stream), "cudaGraphLaunch");
      const auto launched = bench::steady::now();
      set_total += bench::micros(start, set);
      launch_total += bench::micros(set, launched);
    }
    if (record) {
      set_alone_us.push_back(set_total / calls);
      launch_after_us.push_back(launch_total / calls);
    }
  };
  bench::interleave(
      bench::scaled(10), 1,
      {idle_arm(hand_idle_us,
                [&] {
                  by_hand.switch_to(turn++ % 2);
                  bench::check(cudaGraphLaunch(by_hand.exec(), stream), "cudaGraphLaunch");
                }),
       idle_arm(patch_idle_us,
                [&] { single->replay_at_least(keys[(turn++ % 2) == 0 ? 62 : 63], stream); }),
       split_arm});
  for (std::vector<double>* samples :
       {&hand_idle_us, &patch_idle_us, &set_alone_us, &launch_after_us}) {
    for (double& sample : *samples) {
      sample /= changed_all;
    }
  }
  report.add("patch switch per changed node, device idle",
             static_cast<long long>(by_hand.changed_nodes()), "set-params by hand + launch", "us",
             hand_idle_us);
  report.add("patch switch per changed node, device idle",
             static_cast<long long>(by_hand.changed_nodes()),
             "graphcap patch switch (replay_at_least)", "us", patch_idle_us);
  // A breakdown of one arm, not a comparison: its own metric, so that no ratio is read against the
  // whole switch.
  report.add("hand-written switch split, per changed node, device idle",
             static_cast<long long>(by_hand.changed_nodes()), "the set-params calls", "us",
             set_alone_us);
  report.add("hand-written switch split, per changed node, device idle",
             static_cast<long long>(by_hand.changed_nodes()), "the launch after them", "us",
             launch_after_us);

  // ---- the per-unchanged-node cost: keys that differ in one kernel (and their markers) ---------
  float* fixed_a = nullptr;
  float* fixed_b = nullptr;
  bench::check(cudaMalloc(&fixed_a, sizeof(float) * 512 * hidden), "cudaMalloc");
  bench::check(cudaMalloc(&fixed_b, sizeof(float) * 512 * hidden), "cudaMalloc");
  std::vector<double> few_hand_us;
  std::vector<double> few_patch_us;
  std::size_t few_nodes = 0;
  std::size_t few_changed = 0;
  {
    family few{{.progress_line = false, .one_executable = true}};
    const auto captured = few.capture_all({256, 512}, stream, [&](std::size_t key, cudaStream_t s) {
      fixed_step(key, s, fixed_a, fixed_b);
    });
    if (!captured.complete()) {
      std::fprintf(stderr, "bench_families: the one-kernel family failed to capture\n");
      return EXIT_FAILURE;
    }
    graphcap::family_options<std::size_t> kept_options{.progress_line = false};
    family few_kept{kept_options};
    const auto kept_captured =
        few_kept.capture_all({256, 512}, stream, [&](std::size_t key, cudaStream_t s) {
          fixed_step(key, s, fixed_a, fixed_b);
        });
    if (!kept_captured.complete()) {
      std::fprintf(stderr, "bench_families: the one-kernel family failed to capture\n");
      return EXIT_FAILURE;
    }
    const cudaGraph_t few_templates[2] = {few_kept.find(256)->raw_graph(),
                                          few_kept.find(512)->raw_graph()};
    hand_patch few_by_hand(few_templates);
    few_nodes = few.statistics(512)->nodes;
    few_changed = few_by_hand.changed_nodes();
    bench::interleave(
        bench::scaled(10), 1,
        {bench::per_call_arm(few_hand_us, stream, calls,
                             [&] {
                               few_by_hand.switch_to(turn++ % 2);
                               bench::check(cudaGraphLaunch(few_by_hand.exec(), stream),
                                            "cudaGraphLaunch");
                             }),
         bench::per_call_arm(few_patch_us, stream, calls,
                             [&] { few.replay_at_least((turn++ % 2) == 0 ? 256 : 512, stream); })});
    bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    report.note("one-kernel family: " +
                std::to_string(few.statistics(256)->patches + few.statistics(512)->patches) +
                " of " +
                std::to_string(few.statistics(256)->switches + few.statistics(512)->switches) +
                " switches patched by set-params (the others updated)");
  }
  bench::check(cudaFree(fixed_a), "cudaFree");
  bench::check(cudaFree(fixed_b), "cudaFree");
  report.add("patch switch, few nodes changed", static_cast<long long>(few_nodes),
             "set-params by hand + launch", "us", few_hand_us);
  report.add("patch switch, few nodes changed", static_cast<long long>(few_nodes),
             "graphcap patch switch (replay_at_least)", "us", few_patch_us);
  std::vector<double> unchanged_us; // per round: (graphcap - by hand) / unchanged nodes
  for (std::size_t i = 0; i < few_hand_us.size() && i < few_patch_us.size(); ++i) {
    unchanged_us.push_back((few_patch_us[i] - few_hand_us[i]) /
                           static_cast<double>(few_nodes - few_changed));
  }
  report.add("patch switch per unchanged node", static_cast<long long>(few_nodes - few_changed),
             "graphcap - by hand, per unchanged node", "us", unchanged_us);
  report.note("keys 62/63: " +
              std::to_string(single->statistics(keys[62])->patches +
                             single->statistics(keys[63])->patches) +
              " of " +
              std::to_string(single->statistics(keys[62])->switches +
                             single->statistics(keys[63])->switches) +
              " switches patched by set-params (the others updated: a set CUDA refused)");
  report.note("patch switch: " + std::to_string(by_hand.changed_nodes()) + " of " +
              std::to_string(nodes) + " nodes changed (keys 62/63); " +
              std::to_string(few_changed) + " of " + std::to_string(few_nodes) +
              " in the one-kernel family (goals: <= 0.40 us per changed node, <= 0.02 us per "
              "unchanged node, <= 1.10x by hand)");
  report.note("lookup checksum " + std::to_string(checksum));
  bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  bench::check(cudaGraphExecDestroy(raw_exec), "cudaGraphExecDestroy");
  report.finish();
  std::printf("%s%s", kept->report().c_str(), single->report().c_str());
  return 0;
}
