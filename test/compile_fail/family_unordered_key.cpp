// expect: graph_family<Key, Graph> needs keys ordered by <
// find_at_least() needs the smallest captured key not below a request: keys must be ordered.
#include <graphcap/family.hpp>

struct shape {
  int rows = 0;
  bool operator==(const shape&) const = default;
};

#ifdef GRAPHCAP_CONTROL
graphcap::graph_family<int, graphcap::shared_pool_graph> family;
#else
graphcap::graph_family<shape, graphcap::shared_pool_graph> family;
#endif
int main() {}
