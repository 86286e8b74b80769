// expect: switch_\(\) needs at least one body
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
  graph.capture([](auto& cap) {
    const graphcap::condition which = graphcap::make_condition(cap, 0);
#ifdef GRAPHCAP_CONTROL
    graphcap::switch_(cap, which, [](cudaStream_t) {});
#else
    graphcap::switch_(cap, which);
#endif
  });
}
int main() {}
