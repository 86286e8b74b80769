// expect: need #include <graphcap/control_flow.hpp>
// Control flow is a leaf the lean core does not include: using it without its header says which
// header to include.
#include <graphcap/graphcap.hpp>
#ifdef GRAPHCAP_CONTROL
#include <graphcap/control_flow.hpp>
#endif

void work(graphcap::lean_graph& graph) {
  graph.capture([](auto& cap) { static_cast<void>(cap.condition(1)); });
}
int main() {}
