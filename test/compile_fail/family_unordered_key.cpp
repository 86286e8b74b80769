// expect: shape_family<Graph, Key> needs keys ordered by <
// find_at_least() needs the smallest captured key not below a request: keys must be ordered.
#include <graphcap/family.hpp>

struct shape {
  int rows = 0;
  bool operator==(const shape&) const = default;
};

#ifdef GRAPHCAP_CONTROL
graphcap::shape_family<graphcap::shared_pool_graph, int> family;
#else
graphcap::shape_family<graphcap::shared_pool_graph, shape> family;
#endif
int main() {}
