// bench_pools: what allocating during a capture costs per allocation as the capture grows, for
// captures of 1,000, 10,000 and 100,000 allocations of 512 bytes (one size class). A cost linear
// in the capture shows as a flat ns-per-allocation figure over the three sizes; a lookup linear
// in the blocks held (deallocate() before pool/detail/held_blocks.hpp) grows tenfold per step.
// Arms:
//   raw cudaMallocAsync / cudaFreeAsync  memory nodes captured by hand (the baseline);
//   pool::graph_memory_nodes             the same through graphcap;
//   private_pool, new blocks             a new graph: blocks carved from new 2 MiB slabs (one
//                                        cudaMallocAsync per 4096 blocks);
//   private_pool, deallocate             every block given back in the same capture, last first;
//   private_pool, reused in the capture  allocations after those deallocations: the blocks freed
//                                        on this stream;
//   private_pool, make_buffer            owning buffers (pinned blocks), new graph;
//   private_pool, recapture              a recapture of the same graph: the blocks it gave back.
// The notes give, for each arm, the ns per allocation at 100,000 over that at 1,000 (1 is linear).
#include <graphcap/graphcap.hpp>

#include "harness.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

using bench::steady;

constexpr std::size_t block_floats = 128; // 512 bytes: the smallest size class

/// Nanoseconds per operation of `count` operations between two time points.
double ns_per(steady::time_point start, steady::time_point stop, std::size_t count) {
  return 1000.0 * bench::micros(start, stop) / static_cast<double>(count);
}

/// Each (metric, arm)'s samples per capture size, for the table and the growth notes.
class results {
public:
  std::vector<double>& at(const std::string& metric, const std::string& arm, std::size_t count) {
    const auto key = std::make_pair(metric, arm);
    if (std::find(order_.begin(), order_.end(), key) == order_.end()) {
      order_.push_back(key);
    }
    return samples_[key][count];
  }

  /// Rows in the order the arms were first seen, each capture size in turn; then the notes.
  void report_to(bench::report& report, const std::vector<std::size_t>& counts) const {
    for (const std::size_t count : counts) {
      for (const auto& key : order_) {
        const auto& by_count = samples_.at(key);
        if (const auto found = by_count.find(count); found != by_count.end()) {
          report.add(key.first, static_cast<long long>(count), key.second, "ns", found->second);
        }
      }
    }
    for (const auto& key : order_) {
      const auto& by_count = samples_.at(key);
      const auto smallest = by_count.find(counts.front());
      const auto largest = by_count.find(counts.back());
      if (smallest == by_count.end() || largest == by_count.end()) {
        continue;
      }
      const double small = bench::summarize(smallest->second).median;
      const double large = bench::summarize(largest->second).median;
      char text[256];
      std::snprintf(text, sizeof text, "%s, %s: %.2f ns per operation at %zu, %.2f at %zu (x%.2f)",
                    key.first.c_str(), key.second.c_str(), small, counts.front(), large,
                    counts.back(), small > 0 ? large / small : 0.0);
      report.note(text);
    }
  }

private:
  std::vector<std::pair<std::string, std::string>> order_;
  std::map<std::pair<std::string, std::string>, std::map<std::size_t, std::vector<double>>>
      samples_;
};

void measure(results& out, std::size_t count, cudaStream_t capture_stream) {
  using pooled = graphcap::graph_with<graphcap::pool::private_pool>;
  using memory_nodes = graphcap::graph_with<graphcap::pool::graph_memory_nodes>;
  const std::string allocate = "pools: allocate, per allocation";
  const std::string deallocate = "pools: deallocate, per deallocation";
  std::vector<float*> blocks(count);

  const auto raw_arm = [&](bool record) {
    bench::check(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal), "begin");
    const auto t0 = steady::now();
    for (float*& block : blocks) {
      bench::check(cudaMallocAsync(reinterpret_cast<void**>(&block), block_floats * sizeof(float),
                                   capture_stream),
                   "cudaMallocAsync");
    }
    const auto t1 = steady::now();
    for (std::size_t i = count; i-- > 0;) {
      bench::check(cudaFreeAsync(blocks[i], capture_stream), "cudaFreeAsync");
    }
    const auto t2 = steady::now();
    cudaGraph_t graph = nullptr;
    bench::check(cudaStreamEndCapture(capture_stream, &graph), "end");
    bench::check(cudaGraphDestroy(graph), "destroy");
    if (record) {
      out.at(allocate, "raw cudaMallocAsync (memory node)", count).push_back(ns_per(t0, t1, count));
      out.at(deallocate, "raw cudaFreeAsync (memory node)", count).push_back(ns_per(t1, t2, count));
    }
  };
  const auto memory_nodes_arm = [&](bool record) {
    memory_nodes graph{graphcap::keep_graph}; // the template is all this needs
    auto cap = graph.begin_capture(capture_stream);
    const auto t0 = steady::now();
    for (float*& block : blocks) {
      block = cap.allocate<float>(block_floats);
    }
    const auto t1 = steady::now();
    for (std::size_t i = count; i-- > 0;) {
      cap.deallocate(blocks[i]);
    }
    const auto t2 = steady::now();
    cap.end();
    if (record) {
      out.at(allocate, "graphcap pool::graph_memory_nodes", count).push_back(ns_per(t0, t1, count));
      out.at(deallocate, "graphcap pool::graph_memory_nodes", count)
          .push_back(ns_per(t1, t2, count));
    }
  };
  const auto pool_arm = [&](bool record) {
    pooled graph;
    auto cap = graph.begin_capture(capture_stream);
    const auto t0 = steady::now();
    for (float*& block : blocks) {
      block = cap.allocate<float>(block_floats);
    }
    const auto t1 = steady::now();
    for (std::size_t i = count; i-- > 0;) {
      cap.deallocate(blocks[i]);
    }
    const auto t2 = steady::now();
    for (float*& block : blocks) {
      block = cap.allocate<float>(block_floats);
    }
    const auto t3 = steady::now();
    cap.end();
    if (record) {
      out.at(allocate, "graphcap private_pool, new blocks", count).push_back(ns_per(t0, t1, count));
      out.at(deallocate, "graphcap private_pool", count).push_back(ns_per(t1, t2, count));
      out.at(allocate, "graphcap private_pool, reused in the capture", count)
          .push_back(ns_per(t2, t3, count));
    }
  };
  std::vector<graphcap::buffer<float>> buffers;
  buffers.reserve(count);
  const auto buffer_arm = [&](bool record) {
    pooled graph;
    auto cap = graph.begin_capture(capture_stream);
    const auto t0 = steady::now();
    for (std::size_t i = 0; i < count; ++i) {
      buffers.push_back(cap.make_buffer<float>(block_floats));
    }
    const auto t1 = steady::now();
    cap.end();
    buffers.clear();
    if (record) {
      out.at(allocate, "graphcap private_pool, make_buffer", count)
          .push_back(ns_per(t0, t1, count));
    }
  };
  pooled recaptured;
  recaptured.capture(capture_stream, [&](pooled::scope& cap) {
    for (float*& block : blocks) {
      block = cap.allocate<float>(block_floats);
    }
  });
  const auto recapture_arm = [&](bool record) {
    auto cap = recaptured.begin_recapture(capture_stream);
    const auto t0 = steady::now();
    for (float*& block : blocks) {
      block = cap.allocate<float>(block_floats);
    }
    const auto t1 = steady::now();
    cap.end();
    if (record) {
      out.at(allocate, "graphcap private_pool, recapture", count).push_back(ns_per(t0, t1, count));
    }
  };

  for (const char* arm :
       {"raw cudaMallocAsync (memory node)", "graphcap pool::graph_memory_nodes",
        "graphcap private_pool, new blocks", "graphcap private_pool, reused in the capture",
        "graphcap private_pool, make_buffer", "graphcap private_pool, recapture"}) {
    static_cast<void>(out.at(allocate, arm, count)); // the rows' order: the raw baseline first
  }
  for (const char* arm : {"raw cudaFreeAsync (memory node)", "graphcap pool::graph_memory_nodes",
                          "graphcap private_pool"}) {
    static_cast<void>(out.at(deallocate, arm, count));
  }
  const int rounds = count <= 1000 ? 31 : count <= 10000 ? 15 : 7;
  bench::interleave(bench::scaled(rounds), 1,
                    {raw_arm, memory_nodes_arm, pool_arm, buffer_arm, recapture_arm});
}

} // namespace

int main() {
  if (!bench::device_present("bench_pools")) {
    return 0;
  }
  cudaStream_t capture_stream = nullptr;
  bench::check(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking), "stream");
  bench::report report("bench_pools",
                       "allocation during a capture, per allocation, by capture size");
  const std::vector<std::size_t> counts{1000, 10000, 100000};
  results out;
  for (const std::size_t count : counts) {
    measure(out, count, capture_stream);
  }
  out.report_to(report, counts);
  report.finish();
  bench::check(cudaStreamDestroy(capture_stream), "cudaStreamDestroy");
  return 0;
}
