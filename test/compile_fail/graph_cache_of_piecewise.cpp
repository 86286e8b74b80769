// expect: piecewise_graph per key, use graph_family
// A graph_cache holds basic_graphs; a piecewise graph per key goes in a graph_family, and the
// cache's error says so.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#ifdef GRAPHCAP_CONTROL
using cached = graphcap::shared_pool_graph;
#else
using cached = graphcap::piecewise_graph<graphcap::shared_pool_graph>;
#endif

int main() {
  graphcap::graph_cache<int, cached> cache;
  static_cast<void>(cache.size());
}
