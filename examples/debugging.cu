// debugging: check that a graph's replay computes what its work computes eagerly, and draw the
// graph with its kernels' names, its annotation scopes and its conditional bodies.
//
// graphcap::verify (<graphcap/verify.hpp>) runs the work eagerly, poisons the outputs, replays
// the graph and compares, within a tolerance for floating-point outputs: it finds the stale
// pointer this example bakes into a graph on purpose. graphcap::write_dot (<graphcap/dot.hpp>)
// writes a labelled Graphviz picture; scripts/render-dot.sh renders it to PNG.
//
//   example_debugging [output directory]   writes debugging.dot
#include <graphcap/annotations.hpp>
#include <graphcap/control_flow.hpp>
#include <graphcap/dot.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/verify.hpp>

#include "example_support.cuh"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr int n = 1 << 16;
constexpr int threads = 256;
constexpr int blocks = (n + threads - 1) / threads;

__global__ void scale(const float* x, float* y, float factor, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    y[i] = factor * x[i];
  }
}

__global__ void total_of(const float* y, float* total, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    atomicAdd(total, y[i]); // the order of the additions varies from run to run
  }
}

__global__ void relax(float* y, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    y[i] = 0.5F * (y[i] + y[(i + 1) % count]);
  }
}

__global__ void start_count(int* left, int iterations) {
  *left = iterations;
}

__global__ void count_down(int* left, graphcap::condition more) {
  if (--*left <= 0) {
    more.set(0); // the while_ node stops
  }
}

/// One step: y = 2x, total = sum(y) (atomics), on `s`.
void step(const float* x, float* y, float* total, cudaStream_t s) {
  example::check(cudaMemsetAsync(total, 0, sizeof(float), s), "cudaMemsetAsync");
  scale<<<blocks, threads, 0, s>>>(x, y, 2.0F, n);
  total_of<<<blocks, threads, 0, s>>>(y, total, n);
}

/// Verifies a graph of step(), then a graph that baked in a pointer changed since.
void verify_examples(const float* x, const float* other, float* y, float* total) {
  // [verify-basic]
  graphcap::lean_graph graph;
  const auto work = [&](cudaStream_t s) { step(x, y, total, s); };
  graph.capture(work);

  graphcap::verify_options options;
  options.rtol = 1e-5; // total is a sum of atomics: not bit-reproducible
  const graphcap::verify_report report = graphcap::verify(
      graph, work, options, graphcap::output(y, n, "y"), graphcap::output(total, 1, "total"));
  std::printf("%s\n", report.text().c_str());
  report.require(); // throws graphcap::verify_error with the same text if anything differs
  // [/verify-basic]

  // [verify-stale]
  const float* input = x;
  const auto reads_input = [&](cudaStream_t s) { step(input, y, total, s); };
  graphcap::lean_graph stale;
  stale.capture(reads_input);
  input = other; // the graph still reads x: its kernel argument was fixed at capture
  const graphcap::verify_report caught =
      graphcap::verify(stale, reads_input, options, graphcap::output(y, n, "y"));
  std::printf("%s\n", caught.text().c_str()); // "... first at index 0: eager 6, replay 2 ..."
  // [/verify-stale]
  if (caught.ok()) {
    throw graphcap::error("debugging: verify() missed the stale pointer");
  }
}

using annotated_graph = graphcap::graph_with<graphcap::annot::on>;

/// A graph worth a picture: two named layers, a loop with a device-side condition in one.
void draw(const float* x, float* y, float* total, int* left, const std::string& path) {
  // [dot-write]
  annotated_graph graph{graphcap::keep_graph}; // write_dot reads the template
  graph.capture([&](annotated_graph::scope& cap) {
    const cudaStream_t s = cap.stream();
    {
      auto layer = cap.mark("layer 0");
      auto forward = cap.mark("forward");
      step(x, y, total, s);
    }
    {
      auto layer = cap.mark("layer 1");
      start_count<<<1, 1, 0, s>>>(left, 3);
      const graphcap::condition more =
          graphcap::make_condition(cap, 1, graphcap::reset_each_launch);
      graphcap::while_(cap, more, [&](cudaStream_t body) {
        relax<<<blocks, threads, 0, body>>>(y, n);
        count_down<<<1, 1, 0, body>>>(left, more);
      });
    }
  });
  graphcap::write_dot(graph, path, {"debugging: two layers and a while_ loop"});
  // [/dot-write]
  graph.replay();
  example::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

} // namespace

int main(int argc, char** argv) {
  if (!example::device_present("debugging")) {
    return 0;
  }
  const std::string directory = argc > 1 ? std::string{argv[1]} + "/" : std::string{};
  float* x = example::allocate<float>(n);
  float* other = example::allocate<float>(n);
  float* y = example::allocate<float>(n);
  float* total = example::allocate<float>(1);
  int* left = example::allocate<int>(1);
  example::check(cudaMemset(left, 0, sizeof(int)), "cudaMemset");
  std::vector<float> ones(n, 1.0F);
  std::vector<float> threes(n, 3.0F);
  example::check(cudaMemcpy(x, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice),
                 "cudaMemcpy");
  example::check(cudaMemcpy(other, threes.data(), n * sizeof(float), cudaMemcpyHostToDevice),
                 "cudaMemcpy");
  try {
    verify_examples(x, other, y, total);
    draw(x, y, total, left, directory + "debugging.dot");
    std::printf("debugging: wrote %sdebugging.dot (scripts/render-dot.sh renders it)\n",
                directory.c_str());
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "debugging: %s\n", failure.what());
    return 1;
  }
  for (void* memory : {static_cast<void*>(x), static_cast<void*>(other), static_cast<void*>(y),
                       static_cast<void*>(total), static_cast<void*>(left)}) {
    example::check(cudaFree(memory), "cudaFree");
  }
  return 0;
}
