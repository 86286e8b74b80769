// Probe (kept, docs/reliability.md): graphcap's while_ with a body kernel that clears the
// condition, run under compute-sanitizer memcheck, where control_flow_kernel_tests failed with
// cudaErrorIllegalAddress (session 10) while a hand-written WHILE node passed (graph_memory_free,
// case 3). Variants narrow it down: the condition passed whole or as its CUDA handle; one or two
// kernels in the body; the condition's default value set at each launch or not.
//
//   nvcc -std=c++20 -arch=sm_90 -Iinclude -o while_under_memcheck while_under_memcheck.cu
//   for v in 0 1 2 3; do compute-sanitizer --tool memcheck ./while_under_memcheck $v; done
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace gc = graphcap;

__global__ void count_down_whole(int* counter, gc::condition more) {
  const int left = --*counter;
  more.set(left > 0 ? 1U : 0U);
}

__global__ void count_down_handle(int* counter, cudaGraphConditionalHandle more) {
  const int left = --*counter;
  cudaGraphSetConditional(more, left > 0 ? 1U : 0U);
}

__global__ void count_iteration(int* iterations) {
  ++*iterations;
}

static void run(const char* name, bool whole, bool two_kernels, bool reset_each_launch) {
  std::printf("== %s\n", name);
  try {
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    int* memory = nullptr;
    cudaMalloc(&memory, 2 * sizeof(int));
    gc::graph graph;
    graph.capture(stream, [&](gc::graph::scope& cap) {
      const gc::condition more = reset_each_launch
                                     ? graphcap::make_condition(cap, 1, gc::reset_each_launch)
                                     : graphcap::make_condition(cap, 1);
      graphcap::while_(cap, more, [&](auto& body) {
        if (two_kernels) {
          count_iteration<<<1, 1, 0, body.stream()>>>(memory + 1);
        }
        if (whole) {
          count_down_whole<<<1, 1, 0, body.stream()>>>(memory, more);
        } else {
          count_down_handle<<<1, 1, 0, body.stream()>>>(memory, more.handle());
        }
      });
    });
    const int start[2] = {5, 0};
    cudaMemcpy(memory, start, sizeof start, cudaMemcpyHostToDevice);
    graph.replay(stream);
    const cudaError_t status = cudaStreamSynchronize(stream);
    int end[2] = {-1, -1};
    cudaMemcpy(end, memory, sizeof end, cudaMemcpyDeviceToHost);
    std::printf("  synchronize: %s; counter %d (0 expected), iterations %d\n",
                cudaGetErrorName(status), end[0], end[1]);
    cudaFree(memory);
    cudaStreamDestroy(stream);
  } catch (const std::exception& error) {
    std::printf("  threw: %s\n", error.what());
  }
}

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing probed\n");
    return 1;
  }
  // An illegal address ends the context: one variant per process (argument 0 to 3), all when
  // none is named.
  const int only = argc > 1 ? std::atoi(argv[1]) : -1;
  const bool all = only < 0;
  if (all || only == 0)
    run("handle, one kernel, default once", false, false, false);
  if (all || only == 1)
    run("handle, one kernel, reset_each_launch", false, false, true);
  if (all || only == 2)
    run("whole condition, one kernel, reset_each_launch", true, false, true);
  if (all || only == 3)
    run("whole condition, two kernels, reset_each_launch (the test)", true, true, true);
  return 0;
}
