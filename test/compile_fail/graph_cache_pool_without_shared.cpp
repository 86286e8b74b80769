// expect: pool\(\) needs a graph_cache whose graphs use pool::shared
// Graphs with private pools share nothing: there is no one pool to show.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using cached = graphcap::shared_pool_graph;
#else
using cached = graphcap::graph;
#endif

int main() {
  const graphcap::graph_cache<int, cached> cache;
  static_cast<void>(cache.pool());
}
