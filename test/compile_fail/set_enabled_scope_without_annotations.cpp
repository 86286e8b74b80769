// expect: the graph's annotations record no scope's nodes
// Turning a scope's nodes off needs annot::on, which records them: a graph without it is told so
// at compile time.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/rebind.hpp>

#ifdef GRAPHCAP_CONTROL
using scoped = graphcap::graph_with<graphcap::annot::on>;
#else
using scoped = graphcap::lean_graph;
#endif

int main() {
  scoped graph{graphcap::keep_graph};
  if (graph.empty()) {
    return 0;
  }
  graphcap::set_enabled(graph, "dump", false);
}
