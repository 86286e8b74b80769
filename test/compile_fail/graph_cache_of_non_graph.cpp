// expect: graph_cache<Key, Graph> needs a graphcap::basic_graph
// A cache holds graphcap graphs: it captures and replays them.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using cached = graphcap::graph;
#else
using cached = int;
#endif

int main() {
  graphcap::graph_cache<int, cached> cache;
  static_cast<void>(cache.size());
}
