// expect: shape_family<Graph, Key> is spelled graph_family<Key, Graph> since 0\.3
// The 0.2 name of graph_family, with its parameters in the old order (the graph first), still
// compiles for one release, deprecated with a message that gives the new spelling (made an
// error here, so that the test sees it; the control uses the new name).
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#include <graphcap/family.hpp>

#include <type_traits>

#ifdef GRAPHCAP_CONTROL
using old_order = graphcap::graph_family<int, graphcap::shared_pool_graph>;
#else
using old_order = graphcap::shape_family<graphcap::shared_pool_graph, int>;
#endif
static_assert(std::is_same_v<old_order, graphcap::graph_family<int, graphcap::shared_pool_graph>>);

int main() {}
