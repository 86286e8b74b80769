// expect: repeat\(\) keeps its counter in the graph's pool
// repeat(cap, n, body) takes its counter from the graph's pool: a graph with pool::off must pass
// its own (repeat(cap, n, counter, body)). The check is the one repeat.cuh's overloads call.
#include <graphcap/graphcap.hpp>
#include <graphcap/repeat.hpp>

#ifdef GRAPHCAP_CONTROL
using tested = graphcap::graph;
#else
using tested = graphcap::lean_graph;
#endif

void work(tested& graph) {
  graph.capture([](tested::scope& cap) {
    static_cast<void>(graphcap::detail::repeat_builder<tested::scope>::allocate_counter(cap));
  });
}
int main() {}
