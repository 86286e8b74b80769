// expect: annotations\(\) needs a graph with annotations on
// annot::off records nothing, so there is nothing to list.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
#include <graphcap/annotations.hpp>
using checked = graphcap::graph_with<graphcap::annot::on>;
#else
using checked = graphcap::lean_graph;
#endif

int main() {
  const checked graph;
  static_cast<void>(graph.annotations());
}
