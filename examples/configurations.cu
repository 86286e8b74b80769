// configurations: picking policies. A configuration is a type; features that are off cost
// nothing, and the code that uses them compiles unchanged.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>

namespace gc = graphcap;

// Everything spelled out...
using lean = gc::basic_graph<gc::mode::global, gc::pool::off, gc::annot::off, gc::liveness::off>;
// ...or only what differs from the lean defaults, in any order.
using server = gc::graph_with<gc::mode::thread_local_>;
static_assert(std::is_same_v<lean, gc::lean_graph>);
static_assert(sizeof(server) == sizeof(lean), "a capture mode is a type, never stored");

__global__ void touch(int* flag) {
  *flag += 1;
}

int main() {
  std::printf("configurations: sizeof(lean_graph) = %zu bytes (three handles, a device, a node "
              "count, a state)\n",
              sizeof(lean));
  if (!example::device_present("configurations")) {
    return 0;
  }
  int* flag = example::allocate<int>(1);
  example::check(cudaMemset(flag, 0, sizeof(int)), "cudaMemset");

  server graph; // thread_local_: other threads may keep allocating while this one captures
  graph.capture([&](server::scope& cap) {
    auto region = cap.mark("touch"); // annotations are off: an empty marker, no call
    touch<<<1, 1, 0, cap.stream()>>>(flag);
  });
  graph.replay();
  int host = 0;
  example::check(cudaMemcpy(&host, flag, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::printf("configurations: replayed a thread_local_ graph, flag = %d\n", host);
  example::check(cudaFree(flag), "cudaFree");
  return 0;
}
