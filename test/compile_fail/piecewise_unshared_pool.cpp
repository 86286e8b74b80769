// expect: piecewise_graph<Graph> draws every segment from one pool, shared by handle
// The segments of a piecewise graph share one pool, so that a block keeps its address across a
// break: a pool that cannot be shared by handle (graph memory nodes, a user's memory pool) is
// refused by name.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#ifdef GRAPHCAP_CONTROL
graphcap::piecewise_graph<graphcap::graph> step;
#else
graphcap::piecewise_graph<graphcap::graph_with<graphcap::pool::graph_memory_nodes>> step;
#endif
int main() {}
