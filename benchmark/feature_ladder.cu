// bench_features (case 4): the feature ladder. Each policy switched on alone, against the same
// graph with everything off and against the hand-written raw version:
//   all off      replay of the lean graph against raw cudaGraphLaunch (must cost nothing);
//   pool         allocation during capture (a free-list hit; a fresh block), graphcap's pool
//                against CUDA graph memory nodes (pool::graph_memory_nodes and raw
//                cudaMallocAsync in the capture); replay of a graph whose buffers come from the
//                pool, against the same graph on preallocated memory and on memory nodes;
//   liveness     replay with liveness::check, per input, for 1 to 64 external inputs, and for
//                inputs the graph's own pool owns (excluded: O(1));
//   annotations  in bench_annotations (annotation_cost.cu): annot::on links CUPTI.
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <string>
#include <vector>

namespace {

using bench::micros;
using bench::steady;

constexpr int buffer_floats = 256;
constexpr int chain_kernels = 10;
constexpr int chain_buffers = 4;

/// The pool case's graph: a chain of small kernels cycling over four buffers.
void issue_chain(cudaStream_t stream, float* const* buffers) {
  for (int k = 0; k < chain_kernels; ++k) {
    bench::add_scalar<<<1, buffer_floats, 0, stream>>>(buffers[k % chain_buffers], 1.0F,
                                                       buffer_floats);
  }
}

/// Replay calls per sample (a batch of launches).
constexpr int launches = 200;

void allocation_during_capture(bench::report& report, cudaStream_t capture_stream) {
  constexpr int blocks = 64;
  constexpr int repeats = 16;
  using pooled = graphcap::graph_with<graphcap::pool::private_pool>;
  using memory_nodes = graphcap::graph_with<graphcap::pool::graph_memory_nodes>;
  std::vector<double> pool_hit;
  std::vector<double> pool_fresh;
  std::vector<double> nodes_graphcap;
  std::vector<double> nodes_raw;
  std::vector<float*> held(blocks);

  const auto pool_arm = [&](bool record) {
    pooled graph{graphcap::keep_graph};
    auto cap = graph.begin_capture(capture_stream);
    const auto t0 = steady::now();
    for (float*& block : held) {
      block = cap.allocate<float>(buffer_floats); // fresh: carved from a slab (one slab grow)
    }
    const auto t1 = steady::now();
    double hits = 0;
    for (int r = 0; r < repeats; ++r) {
      for (float* block : held) {
        cap.deallocate(block);
      }
      const auto h0 = steady::now();
      for (float*& block : held) {
        block = cap.allocate<float>(buffer_floats); // a free-list hit: same size, same stream
      }
      hits += micros(h0, steady::now());
    }
    cap.end();
    if (record) {
      pool_fresh.push_back(1000.0 * micros(t0, t1) / blocks);
      pool_hit.push_back(1000.0 * hits / (repeats * blocks));
    }
  };
  const auto memory_nodes_arm = [&](bool record) {
    memory_nodes graph{graphcap::keep_graph};
    auto cap = graph.begin_capture(capture_stream);
    const auto t0 = steady::now();
    for (float*& block : held) {
      block = cap.allocate<float>(buffer_floats);
    }
    const auto t1 = steady::now();
    for (float* block : held) {
      cap.deallocate(block);
    }
    cap.end();
    if (record) {
      nodes_graphcap.push_back(1000.0 * micros(t0, t1) / blocks);
    }
  };
  const auto raw_arm = [&](bool record) {
    bench::check(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal), "begin");
    const auto t0 = steady::now();
    for (float*& block : held) {
      bench::check(cudaMallocAsync(reinterpret_cast<void**>(&block), buffer_floats * sizeof(float),
                                   capture_stream),
                   "cudaMallocAsync");
    }
    const auto t1 = steady::now();
    for (float* block : held) {
      bench::check(cudaFreeAsync(block, capture_stream), "cudaFreeAsync");
    }
    cudaGraph_t graph = nullptr;
    bench::check(cudaStreamEndCapture(capture_stream, &graph), "end");
    bench::check(cudaGraphDestroy(graph), "destroy");
    if (record) {
      nodes_raw.push_back(1000.0 * micros(t0, t1) / blocks);
    }
  };
  bench::interleave(bench::scaled(41), 2, {raw_arm, memory_nodes_arm, pool_arm});
  const std::string metric = "pool: allocate during capture";
  report.add(metric, "1KiB", "raw cudaMallocAsync (memory node)", "ns", nodes_raw);
  report.add(metric, "1KiB", "graphcap pool::graph_memory_nodes", "ns", nodes_graphcap);
  report.add(metric, "1KiB", "graphcap private_pool, fresh block", "ns", pool_fresh);
  report.add(metric, "1KiB", "graphcap private_pool, free-list hit", "ns", pool_hit);
}

/// A cudaMemPool_t of the current device, for the pool::user arm.
class user_memory_pool {
public:
  user_memory_pool() {
    int device = 0;
    bench::check(cudaGetDevice(&device), "cudaGetDevice");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    bench::check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
  }
  ~user_memory_pool() { static_cast<void>(cudaMemPoolDestroy(pool_)); }
  user_memory_pool(const user_memory_pool&) = delete;
  user_memory_pool& operator=(const user_memory_pool&) = delete;
  [[nodiscard]] cudaMemPool_t get() const noexcept { return pool_; }

private:
  cudaMemPool_t pool_ = nullptr;
};

/// Captures the chain on buffers from `graph`'s pool.
template <class Graph>
void capture_pooled_chain(Graph& graph, cudaStream_t capture_stream) {
  graph.capture(capture_stream, [&](typename Graph::scope& cap) {
    std::vector<float*> buffers(chain_buffers);
    for (float*& buffer : buffers) {
      buffer = cap.template allocate<float>(buffer_floats);
    }
    issue_chain(cap.stream(), buffers.data());
  });
}

// The pool goal is stated per pool kind: a private pool no one shares, one whose handle was taken,
// pool::shared and pool::user (graph_family and graph_cache use shared pools). Until #48 all but
// the first ended every capture with a completion marker (docs/pools.md).
void replay_with_pool(bench::report& report, cudaStream_t stream, cudaStream_t capture_stream) {
  std::vector<float*> preallocated(chain_buffers);
  for (float*& buffer : preallocated) {
    bench::check(cudaMalloc(&buffer, buffer_floats * sizeof(float)), "cudaMalloc");
  }
  const bench::raw_graph raw(capture_stream,
                             [&](cudaStream_t s) { issue_chain(s, preallocated.data()); });
  // Raw against raw: how far from 1.0 two identical arms read in this run.
  const bench::raw_graph control(capture_stream,
                                 [&](cudaStream_t s) { issue_chain(s, preallocated.data()); });

  graphcap::lean_graph lean;
  lean.capture(capture_stream, [&](cudaStream_t s) { issue_chain(s, preallocated.data()); });

  using pooled = graphcap::graph_with<graphcap::pool::private_pool>;
  pooled pool_graph;
  capture_pooled_chain(pool_graph, capture_stream);

  pooled handed_graph; // its handle taken before the capture: the pool may be shared
  const graphcap::pool_handle handed_pool = handed_graph.pool();
  capture_pooled_chain(handed_graph, capture_stream);

  using shared = graphcap::graph_with<graphcap::pool::shared>;
  const graphcap::pool_handle shared_pool = graphcap::graph_pool_handle();
  shared shared_graph{shared_pool};
  capture_pooled_chain(shared_graph, capture_stream);

  const user_memory_pool user_pool;
  using user = graphcap::graph_with<graphcap::pool::user>;
  user user_graph{user_pool.get()};
  capture_pooled_chain(user_graph, capture_stream);

  using memory_nodes = graphcap::graph_with<graphcap::pool::graph_memory_nodes>;
  memory_nodes nodes_graph;
  nodes_graph.capture(capture_stream, [&](memory_nodes::scope& cap) {
    std::vector<float*> buffers(chain_buffers);
    for (float*& buffer : buffers) {
      buffer = cap.allocate<float>(buffer_floats);
    }
    issue_chain(cap.stream(), buffers.data());
    for (float* buffer : buffers) {
      cap.deallocate(buffer);
    }
  });

  lean.upload(stream);
  pool_graph.upload(stream);
  handed_graph.upload(stream);
  shared_graph.upload(stream);
  user_graph.upload(stream);
  nodes_graph.upload(stream);
  bench::check(cudaGraphUpload(raw.exec(), stream), "cudaGraphUpload");
  bench::check(cudaGraphUpload(control.exec(), stream), "cudaGraphUpload");
  // Since #48 no pool adds a node of its own (no completion marker): every graph has the
  // preallocated one's nodes, and a give-back that hands blocks on waits for the device instead.
  report.note("pool: nodes per graph: preallocated " + std::to_string(lean.node_count()) +
              ", private_pool " + std::to_string(pool_graph.node_count()) +
              ", private_pool with its handle taken " + std::to_string(handed_graph.node_count()) +
              ", pool::shared " + std::to_string(shared_graph.node_count()) + ", pool::user " +
              std::to_string(user_graph.node_count()));

  std::vector<double> raw_times;
  std::vector<double> control_times;
  std::vector<double> lean_times;
  std::vector<double> pool_times;
  std::vector<double> handed_times;
  std::vector<double> shared_times;
  std::vector<double> user_times;
  std::vector<double> nodes_times;
  bench::interleave(
      bench::scaled(41), 3,
      {bench::per_call_arm(raw_times, stream, launches, [&] { raw.replay(stream); }),
       bench::per_call_arm(control_times, stream, launches, [&] { control.replay(stream); }),
       bench::per_call_arm(lean_times, stream, launches, [&] { lean.replay(stream); }),
       bench::per_call_arm(pool_times, stream, launches, [&] { pool_graph.replay(stream); }),
       bench::per_call_arm(handed_times, stream, launches, [&] { handed_graph.replay(stream); }),
       bench::per_call_arm(shared_times, stream, launches, [&] { shared_graph.replay(stream); }),
       bench::per_call_arm(user_times, stream, launches, [&] { user_graph.replay(stream); }),
       bench::per_call_arm(nodes_times, stream, launches, [&] { nodes_graph.replay(stream); })});
  const std::string all_off = "all off: replay call";
  report.add(all_off, chain_kernels, "raw cudaGraphLaunch", "us", raw_times);
  report.add(all_off, chain_kernels, "graphcap lean_graph", "us", lean_times);
  report.add(all_off, chain_kernels, "raw cudaGraphLaunch, control", "us", control_times);
  const std::string metric = "pool: replay call";
  report.add(metric, chain_kernels, "graphcap lean_graph, preallocated", "us", lean_times);
  report.add(metric, chain_kernels, "graphcap private_pool", "us", pool_times);
  report.add(metric, chain_kernels, "graphcap private_pool, handle taken", "us", handed_times);
  report.add(metric, chain_kernels, "graphcap pool::shared", "us", shared_times);
  report.add(metric, chain_kernels, "graphcap pool::user", "us", user_times);
  report.add(metric, chain_kernels, "graphcap pool::graph_memory_nodes", "us", nodes_times);
  shared_graph.reset();
  user_graph.reset();
  handed_graph.reset();
  for (float* buffer : preallocated) {
    bench::check(cudaFree(buffer), "cudaFree");
  }
}

void liveness_per_input(bench::report& report, cudaStream_t stream, cudaStream_t capture_stream) {
  using checked = graphcap::graph_with<graphcap::liveness::check>;
  using pooled = graphcap::graph_with<graphcap::pool::private_pool>;
  using pooled_checked =
      graphcap::graph_with<graphcap::pool::private_pool, graphcap::liveness::check>;
  for (const int inputs : {1, 4, 16, 64}) {
    bench::pointer_table table{};
    table.count = inputs;
    for (int i = 0; i < inputs; ++i) { // separate allocations: separate buffer ids
      bench::check(cudaMalloc(&table.pointers[i], buffer_floats * sizeof(float)), "cudaMalloc");
    }
    const auto issue = [&](cudaStream_t s) { bench::touch_all<<<1, 32, 0, s>>>(table); };
    const bench::raw_graph raw(capture_stream, issue);
    graphcap::lean_graph off;
    off.capture(capture_stream, issue);
    checked on;
    on.capture(capture_stream, issue);
    const auto own_inputs = [&](auto& cap) {
      bench::pointer_table owned{};
      owned.count = inputs;
      for (int i = 0; i < inputs; ++i) {
        owned.pointers[i] = cap.template allocate<float>(buffer_floats);
      }
      bench::touch_all<<<1, 32, 0, cap.stream()>>>(owned);
    };
    pooled pool_off;
    pool_off.capture(capture_stream, own_inputs);
    pooled_checked pool_on;
    pool_on.capture(capture_stream, own_inputs);
    off.upload(stream);
    on.upload(stream);
    pool_off.upload(stream);
    pool_on.upload(stream);

    std::vector<double> raw_times;
    std::vector<double> off_times;
    std::vector<double> on_times;
    std::vector<double> pool_off_times;
    std::vector<double> pool_on_times;
    bench::interleave(
        bench::scaled(31), 3,
        {bench::per_call_arm(raw_times, stream, launches, [&] { raw.replay(stream); }),
         bench::per_call_arm(off_times, stream, launches, [&] { off.replay(stream); }),
         bench::per_call_arm(on_times, stream, launches, [&] { on.replay(stream); }),
         bench::per_call_arm(pool_off_times, stream, launches, [&] { pool_off.replay(stream); }),
         bench::per_call_arm(pool_on_times, stream, launches, [&] { pool_on.replay(stream); })});
    // The samples of one round ran side by side: their difference is the check's cost.
    std::vector<double> per_input;
    std::vector<double> owned_per_input;
    for (std::size_t i = 0; i < on_times.size(); ++i) {
      per_input.push_back(1000.0 * (on_times[i] - off_times[i]) / inputs);
      owned_per_input.push_back(1000.0 * (pool_on_times[i] - pool_off_times[i]) / inputs);
    }
    const std::string metric = "liveness: replay call";
    report.add(metric, inputs, "raw cudaGraphLaunch", "us", raw_times);
    report.add(metric, inputs, "graphcap liveness::off", "us", off_times);
    report.add(metric, inputs, "graphcap liveness::check", "us", on_times);
    report.add(metric, inputs, "graphcap private_pool", "us", pool_off_times);
    report.add(metric, inputs, "graphcap private_pool + liveness::check", "us", pool_on_times);
    report.add("liveness: cost per input per replay", inputs, "external inputs (cudaMalloc)", "ns",
               per_input);
    report.add("liveness: cost per input per replay", inputs, "graphcap-owned inputs (pool)", "ns",
               owned_per_input);
    report.note("liveness, " + std::to_string(inputs) + " inputs: check tracks " +
                std::to_string(on.liveness_policy().input_count()) + " inputs, pool + check " +
                std::to_string(pool_on.liveness_policy().input_count()));
    for (int i = 0; i < inputs; ++i) {
      bench::check(cudaFree(table.pointers[i]), "cudaFree");
    }
  }
}

} // namespace

int main() {
  if (!bench::device_present("bench_features")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;

  bench::report report("bench_features", "the cost of each policy switched on alone");
  replay_with_pool(report, stream, capture_stream);
  allocation_during_capture(report, capture_stream);
  liveness_per_input(report, stream, capture_stream);
  // The annotations rung (annot::on: per scope at capture, nothing at replay) is its own
  // executable, bench_annotations (benchmark/annotation_cost.cu), as annot::on links CUPTI.
  report.note("annotations: see bench_annotations");
  report.finish();
  return 0;
}
