// expect: allocate\(\) needs a graph whose pool policy allocates
// A body offers what its graph's policies offer, and no more: no pool, no allocate().
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using tested = graphcap::graph;
#else
using tested = graphcap::lean_graph;
#endif

void work(tested& graph) {
  graph.capture([](auto& cap) {
    const graphcap::condition flag = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, flag,
                  [](auto& body) { static_cast<void>(body.template allocate<float>(16)); });
  });
}
int main() {}
