// expect: exclude_from_liveness\(\) and add_liveness_input\(\) need a graph with liveness::check
// The public ways to exclude a range from, or add an input to, a graph's liveness check after its
// capture need the liveness::check policy: a graph without it has nothing to exclude from.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using tested = graphcap::graph_with<graphcap::liveness::check>;
#else
using tested = graphcap::graph;
#endif

void work(tested& graph, const void* pointer) {
  graphcap::exclude_from_liveness(graph, pointer, 64);
  graphcap::add_liveness_input(graph, pointer);
}
int main() {}
