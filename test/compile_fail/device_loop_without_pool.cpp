// expect: device_loop\(\) keeps its counter in the graph's pool
// device_loop(cap, n, body) takes its counter from the graph's pool: a graph with pool::off must
// pass its own (device_loop(cap, n, counter, body)). The check is the one device_loop.cuh's
// overloads call.
#include <graphcap/control_flow/device_loop.hpp>
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using tested = graphcap::graph;
#else
using tested = graphcap::lean_graph;
#endif

void work(tested& graph) {
  graph.capture([](tested::scope& cap) {
    static_cast<void>(graphcap::detail::device_loop_builder<tested::scope>::allocate_counter(cap));
  });
}
int main() {}
