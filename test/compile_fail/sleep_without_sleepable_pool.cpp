// expect: sleep\(\) needs a sleepable pool
// Only pool::sleepable's memory can sleep: a slab pool's handle says so at compile time.
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#ifdef GRAPHCAP_CONTROL
using graph_type = graphcap::graph_with<graphcap::pool::sleepable>;
#else
using graph_type = graphcap::graph;
#endif

int main() {
  graph_type graph;
  graph.pool().sleep();
}
