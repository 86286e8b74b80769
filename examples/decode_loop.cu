// decode_loop: a loop whose exit is decided on the device, captured once as a WHILE node.
//
// A "decode step" runs until a kernel sees the stop token. Driven from the host, every
// iteration copies a flag back and synchronizes; captured with graphcap::control_flow, the
// decision stays on the device and the whole loop is one replay.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <chrono>
#include <cstdio>

namespace {

constexpr int stop_after = 2000; // the "stop token" appears at this step

/// One decode step: advances the position, and clears `more` when the stop token is reached.
__global__ void decode_step(int* position, int* more_on_host_loop, graphcap::condition more) {
  const int next = ++*position;
  const bool go_on = next < stop_after;
  *more_on_host_loop = go_on ? 1 : 0; // what the host loop copies back
  if (more.handle() != 0) {
    more.set(go_on ? 1U : 0U); // what the WHILE node reads
  }
}

} // namespace

int main() {
  if (!example::device_present("decode_loop")) {
    return 0;
  }
  int* position = nullptr;
  int* more_flag = nullptr;
  example::check(cudaMalloc(&position, sizeof(int)), "cudaMalloc");
  example::check(cudaMalloc(&more_flag, sizeof(int)), "cudaMalloc");
  cudaStream_t stream = nullptr;
  example::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // The host loop: launch a step, copy the flag back, decide on the host.
  example::check(cudaMemsetAsync(position, 0, sizeof(int), stream), "cudaMemsetAsync");
  auto start = std::chrono::steady_clock::now();
  int host_iterations = 0;
  for (int more = 1; more != 0; ++host_iterations) {
    decode_step<<<1, 1, 0, stream>>>(position, more_flag, graphcap::condition{});
    example::check(cudaMemcpyAsync(&more, more_flag, sizeof more, cudaMemcpyDeviceToHost, stream),
                   "cudaMemcpyAsync");
    example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  const std::chrono::duration<double, std::micro> host_loop =
      std::chrono::steady_clock::now() - start;

  // [while-loop]
  graphcap::lean_graph graph;
  graph.capture(stream, [&](auto& cap) {
    const graphcap::condition more = graphcap::make_condition(cap, 1, graphcap::reset_each_launch);
    graphcap::while_(cap, more, [&](cudaStream_t body) {
      decode_step<<<1, 1, 0, body>>>(position, more_flag, more); // clears `more` at the end
    });
  });
  // [/while-loop]
  example::check(cudaMemsetAsync(position, 0, sizeof(int), stream), "cudaMemsetAsync");
  graph.replay(stream); // warm-up: the first launch uploads the graph
  example::check(cudaMemsetAsync(position, 0, sizeof(int), stream), "cudaMemsetAsync");
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  start = std::chrono::steady_clock::now();
  graph.replay(stream);
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::chrono::duration<double, std::micro> device_loop =
      std::chrono::steady_clock::now() - start;
  int device_iterations = 0;
  example::check(cudaMemcpy(&device_iterations, position, sizeof(int), cudaMemcpyDeviceToHost),
                 "cudaMemcpy");

  std::printf("decode_loop: host loop %d iterations, %.2f us each; WHILE node %d iterations, "
              "%.2f us each (%.1fx)\n",
              host_iterations, host_loop.count() / host_iterations, device_iterations,
              device_loop.count() / device_iterations,
              (host_loop.count() / host_iterations) / (device_loop.count() / device_iterations));
  cudaStreamDestroy(stream);
  cudaFree(more_flag);
  cudaFree(position);
  return host_iterations == device_iterations ? 0 : 1;
}
