// expect: deallocate\(\) needs a graph whose pool policy allocates
// pool::off hands out no memory, so there is none to give back.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using config = graphcap::graph;
#else
using config = graphcap::lean_graph;
#endif

void work(config& graph, float* pointer) {
  graph.capture([&](config::scope& cap) { cap.deallocate(pointer); });
}
int main() {}
