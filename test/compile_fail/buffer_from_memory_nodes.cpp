// expect: make_buffer\(\) needs a graph whose pool keeps blocks in slabs
// Graph memory nodes belong to their graph: no block can outlive it.
#include <graphcap/graphcap.hpp>

using nodes_graph = graphcap::graph_with<graphcap::pool::graph_memory_nodes>;

void work(nodes_graph& graph) {
  graph.capture([](nodes_graph::scope& cap) {
#ifdef GRAPHCAP_CONTROL
    static_cast<void>(cap.allocate<float>(256));
#else
    const graphcap::buffer<float> output = cap.make_buffer<float>(256);
    static_cast<void>(output);
#endif
  });
}
int main() {}
