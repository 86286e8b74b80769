// expect: pool\(\) needs a graph whose pool can be shared
// A graph without a pool has no pool to share.
#include <graphcap/graphcap.hpp>

int main() {
#ifdef GRAPHCAP_CONTROL
  graphcap::graph graph;
#else
  graphcap::lean_graph graph;
#endif
  auto handle = graph.pool();
  static_cast<void>(handle);
}
