// rebind_requests: a serving step captured once, replayed for requests whose inputs and outputs
// live in different buffers each time. PyTorch's way copies every request into the graph's
// static buffers before each replay; graphcap::rebinder moves the graph's inputs to the
// request's own buffers instead, patching only the nodes that hold them (docs/rebinding.md). It
// prints the time of each way per request and checks that both compute the same outputs.
#include <graphcap/dot.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/rebind.hpp>

#include "example_support.cuh"

#include <cstdio>
#include <string>
#include <vector>

__global__ void embed(const float* tokens, float* hidden, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    hidden[i] = tokens[i] * 2.0F;
  }
}

__global__ void layer(float* hidden, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    hidden[i] = hidden[i] * 0.5F + 1.0F;
  }
}

__global__ void head(const float* hidden, float* logits, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    logits[i] = hidden[i] + 3.0F;
  }
}

namespace {

constexpr int width = 1 << 18; // a 1 MiB input per request
constexpr int layers = 32;
constexpr int threads = 256;
constexpr int blocks = (width + threads - 1) / threads;

/// The step: embed the tokens, 32 layers on the hidden state, the head writes the logits.
void forward(const float* tokens, float* hidden, float* logits, cudaStream_t stream) {
  embed<<<blocks, threads, 0, stream>>>(tokens, hidden, width);
  for (int k = 0; k < layers; ++k) {
    layer<<<blocks, threads, 0, stream>>>(hidden, width);
  }
  head<<<blocks, threads, 0, stream>>>(hidden, logits, width);
}

/// A request: its own input and output buffers.
struct request {
  float* tokens = example::allocate<float>(width);
  float* logits = example::allocate<float>(width);
};

} // namespace

int main(int argc, char** argv) {
  if (!example::device_present("rebind_requests")) {
    return 0;
  }
  cudaStream_t stream = example::create_stream();
  float* hidden = example::allocate<float>(width);
  std::vector<request> requests(4);
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const std::vector<float> tokens(width, static_cast<float>(r + 1));
    example::check(cudaMemcpy(requests[r].tokens, tokens.data(), width * sizeof(float),
                              cudaMemcpyHostToDevice),
                   "cudaMemcpy");
  }

  // PyTorch's way: static buffers, a copy in and a copy out around each replay.
  request fixed;
  graphcap::graph copying;
  copying.capture(stream, [&](cudaStream_t s) { forward(fixed.tokens, hidden, fixed.logits, s); });
  int served = 0;
  const double copy_us = example::time_us(stream, 200, [&] {
    const request& next = requests[served++ % requests.size()];
    example::check(cudaMemcpyAsync(fixed.tokens, next.tokens, width * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync");
    copying.replay(stream);
    example::check(cudaMemcpyAsync(next.logits, fixed.logits, width * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync");
  });
  const std::vector<float> copied = [&] {
    std::vector<float> out(width);
    example::check(
        cudaMemcpy(out.data(), requests[1].logits, width * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
    return out;
  }();

  // [rebind]
  graphcap::graph step{graphcap::keep_graph}; // the rebinder patches the kept template too
  step.capture(stream,
               [&](cudaStream_t s) { forward(requests[0].tokens, hidden, requests[0].logits, s); });
  graphcap::rebinder io{step, {requests[0].tokens, requests[0].logits}};
  const request* bound = &requests[0];
  const auto serve = [&](const request& next) {
    io.rebind({{bound->tokens, next.tokens}, {bound->logits, next.logits}}); // 2 nodes patched
    bound = &next;
    step.replay(stream);
  };
  // [/rebind]
  served = 0;
  const double rebind_us =
      example::time_us(stream, 200, [&] { serve(requests[served++ % requests.size()]); });
  std::vector<float> rebound(width);
  example::check(
      cudaMemcpy(rebound.data(), requests[1].logits, width * sizeof(float), cudaMemcpyDeviceToHost),
      "cudaMemcpy");
  if (argc > 1) { // a directory: the graph drawn with what a rebind patches
    // [picture]
    graphcap::dot_options picture;
    picture.notes = io.dot_notes(); // outlined: the nodes a rebind patches, and where
    graphcap::write_dot(step, std::string{argv[1]} + "/rebind_requests.dot", picture);
    // [/picture]
  }
  const bool same = rebound == copied;
  std::printf("rebind_requests: %d kernels, 1 MiB in and out per request: copy in and out %.1f us "
              "per request, rebind %.1f us; outputs %s\n",
              layers + 2, copy_us, rebind_us, same ? "identical" : "DIFFER");
  for (request& r : requests) {
    cudaFree(r.tokens);
    cudaFree(r.logits);
  }
  cudaFree(fixed.tokens);
  cudaFree(fixed.logits);
  cudaFree(hidden);
  cudaStreamDestroy(stream);
  return same ? 0 : 1;
}
