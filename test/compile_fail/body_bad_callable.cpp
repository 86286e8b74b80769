// expect: a conditional body must be a callable
// A body takes the body's scope, its stream, or nothing, as capture(work) does.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
  graph.capture([](auto& cap) {
    const graphcap::condition flag = graphcap::make_condition(cap, 1);
#ifdef GRAPHCAP_CONTROL
    graphcap::while_(cap, flag, [](cudaStream_t) {});
#else
    graphcap::while_(cap, flag, [](int, int) {});
#endif
  });
}
int main() {}
