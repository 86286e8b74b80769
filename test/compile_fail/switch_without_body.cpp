// expect: switch_\(\) needs at least one body
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
  graph.capture([](auto& cap) {
    const graphcap::condition which = cap.condition(0);
#ifdef GRAPHCAP_CONTROL
    cap.switch_(which, [](cudaStream_t) {});
#else
    cap.switch_(which);
#endif
  });
}
int main() {}
