// expect: pool_statistics\(\) needs a graph with a slab pool
// A graph without a pool has no pool statistics.
#include <graphcap/graphcap.hpp>

int main() {
#ifdef GRAPHCAP_CONTROL
  graphcap::graph graph;
#else
  graphcap::lean_graph graph;
#endif
  const auto statistics = graph.pool_statistics();
  static_cast<void>(statistics);
}
