// expect: needs #include <graphcap/control_flow.hpp>
// Control flow is a leaf the lean core does not include: using it without its header says which
// header to include. The member spelling is deprecated (0.5) and kept one release: the free
// spelling, graphcap::make_condition(cap, 1), is not declared at all without the header.
#include <graphcap/graphcap.hpp>
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#ifdef GRAPHCAP_CONTROL
#include <graphcap/control_flow.hpp>
#endif

void work(graphcap::lean_graph& graph) {
  graph.capture([](auto& cap) { static_cast<void>(cap.condition(1)); });
}
int main() {}
