// expect: graph_family<Key, Graph> needs a graphcap::basic_graph whose pool can be shared
// A family draws every key's graph from one pool: a graph without a slab pool cannot join it.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
graphcap::graph_family<std::size_t, graphcap::shared_pool_graph> family;
#else
graphcap::graph_family<std::size_t, graphcap::lean_graph> family;
#endif
int main() {}
