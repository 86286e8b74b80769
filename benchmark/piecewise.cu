// bench_piecewise: a step of 200 small kernels (x += 1 over 1024 floats, as bench_step) in which
// 4 "attention" launches have a grid sized from a host value that changes every step, so no
// single graph can hold it. Every step ends with a stream synchronize; each step's host time is
// a sample. Arms of the split step (metric "split step"):
//   raw split           5 raw graphs of the 196 fixed kernels, the 4 attention launches eager
//                       between them: what the split costs written by hand (the baseline)
//   graphcap piecewise  graphcap::piecewise_graph: the same 5 segments and 4 islands
//   raw eager           the 200 launches, eagerly
// and of the step without islands (metric "whole step"): the 200 kernels with the attention
// grid fixed, as one raw graph (the baseline), a graphcap graph, and a piecewise graph that has
// no island (one segment).
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <memory>
#include <vector>

namespace {

constexpr int kernels_per_step = 200;
constexpr int islands = 4;
constexpr int fixed_kernels = kernels_per_step - islands; // 196, in segments of 40 (36 last)
constexpr int segment_kernels = 40;
constexpr int elements = 1024;
constexpr int threads = 256;

/// The attention launch's length at step `step`: a host value, different every step.
int length_of(int step) {
  return 256 + (step * 97) % (elements - 256);
}

void launch_fixed(cudaStream_t stream, float* x) {
  bench::add_scalar<<<elements / threads, threads, 0, stream>>>(x, 1.0F, elements);
}

void launch_attention(cudaStream_t stream, float* x, int length) {
  bench::add_scalar<<<(length + threads - 1) / threads, threads, 0, stream>>>(x, 1.0F, length);
}

bool attention_after(int k) {
  return (k + 1) % segment_kernels == 0 && k + 1 <= segment_kernels * islands;
}

} // namespace

int main() {
  if (!bench::device_present("bench_piecewise")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::device_array<float> x(elements);
  bench::check(cudaMemset(x, 0, elements * sizeof(float)), "cudaMemset");
  int length = length_of(0);
  int step_number = 0;

  // The split written by hand: 5 raw graphs, one per run of fixed kernels.
  std::vector<std::unique_ptr<bench::raw_graph>> split;
  for (int first = 0; first < fixed_kernels; first += segment_kernels) {
    const int last =
        first + segment_kernels < fixed_kernels ? first + segment_kernels : fixed_kernels;
    split.push_back(std::make_unique<bench::raw_graph>(capture_stream, [&](cudaStream_t s) {
      for (int k = first; k < last; ++k) {
        launch_fixed(s, x);
      }
    }));
  }
  graphcap::piecewise_graph<graphcap::lean_graph> piecewise;
  piecewise.capture(capture_stream, [&](auto& cap) {
    for (int k = 0; k < fixed_kernels; ++k) {
      launch_fixed(cap.stream(), x);
      if (attention_after(k)) {
        cap.eager([&](cudaStream_t s) { launch_attention(s, x, length); });
      }
    }
  });
  if (piecewise.segment_count() != split.size()) {
    std::fprintf(stderr, "bench_piecewise: %zu segments, %zu hand-written graphs\n",
                 piecewise.segment_count(), split.size());
    return 1;
  }
  // The whole step without islands (the attention grid fixed at its largest).
  const auto whole_step = [&](cudaStream_t s) {
    for (int k = 0; k < fixed_kernels; ++k) {
      launch_fixed(s, x);
      if (attention_after(k)) {
        launch_attention(s, x, elements);
      }
    }
  };
  const bench::raw_graph raw_whole(capture_stream, whole_step);
  graphcap::lean_graph graph_whole;
  graph_whole.capture(capture_stream, whole_step);
  graphcap::piecewise_graph<graphcap::lean_graph> piecewise_whole;
  piecewise_whole.capture(capture_stream, whole_step);
  for (const auto& raw : split) {
    bench::check(cudaGraphUpload(raw->exec(), stream), "cudaGraphUpload");
  }
  bench::check(cudaGraphUpload(raw_whole.exec(), stream), "cudaGraphUpload");
  graph_whole.upload(stream);
  for (std::size_t k = 0; k < piecewise_whole.segment_count(); ++k) {
    bench::check(cudaGraphUpload(piecewise_whole.segment(k).raw_exec(), stream), "upload");
  }
  for (std::size_t k = 0; k < piecewise.segment_count(); ++k) {
    bench::check(cudaGraphUpload(piecewise.segment(k).raw_exec(), stream), "upload");
  }

  const int steps = 500;
  // Runs `steps` steps, each with the next length and synchronized, keeping each step's time.
  const auto run_steps = [&](std::vector<double>& samples, bool record, auto&& step) {
    bench::synchronized_steps(stream, steps, samples, record, step,
                              [&] { length = length_of(++step_number); });
  };
  std::vector<double> split_times;
  std::vector<double> piecewise_times;
  std::vector<double> eager_times;
  std::vector<double> raw_whole_times;
  std::vector<double> graph_whole_times;
  std::vector<double> piecewise_whole_times;
  bench::report report("bench_piecewise",
                       "host time per step (us): 200 small kernels, 4 with a host-valued grid, "
                       "synchronized");
  bench::interleave(
      bench::scaled(3), 1,
      {[&](bool record) {
         run_steps(split_times, record, [&] {
           for (std::size_t k = 0; k < split.size(); ++k) {
             split[k]->replay(stream);
             if (k + 1 < split.size()) {
               launch_attention(stream, x, length);
             }
           }
           bench::check(cudaGetLastError(), "kernel launch");
         });
       },
       [&](bool record) { run_steps(piecewise_times, record, [&] { piecewise.replay(stream); }); },
       [&](bool record) {
         run_steps(eager_times, record, [&] {
           for (int k = 0; k < fixed_kernels; ++k) {
             launch_fixed(stream, x);
             if (attention_after(k)) {
               launch_attention(stream, x, length);
             }
           }
           bench::check(cudaGetLastError(), "kernel launch");
         });
       },
       [&](bool record) { run_steps(raw_whole_times, record, [&] { raw_whole.replay(stream); }); },
       [&](bool record) {
         run_steps(graph_whole_times, record, [&] { graph_whole.replay(stream); });
       },
       [&](bool record) {
         run_steps(piecewise_whole_times, record, [&] { piecewise_whole.replay(stream); });
       }});
  report.add("split step", kernels_per_step, "raw split", "us", split_times);
  report.add("split step", kernels_per_step, "graphcap piecewise", "us", piecewise_times);
  report.add("split step", kernels_per_step, "raw eager", "us", eager_times);
  report.add("whole step", kernels_per_step, "raw graph", "us", raw_whole_times);
  report.add("whole step", kernels_per_step, "graphcap graph", "us", graph_whole_times);
  report.add("whole step", kernels_per_step, "graphcap piecewise, no island", "us",
             piecewise_whole_times);
  report.finish();
  return 0;
}
