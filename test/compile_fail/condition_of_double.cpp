// expect: condition\(initial\) takes an integer
// A condition's initial value is an integer: a floating-point one does not compile (it would
// convert to 0 with a warning at most).
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
  graph.capture([](auto& cap) {
#ifdef GRAPHCAP_CONTROL
    static_cast<void>(graphcap::make_condition(cap, 1));
#else
    static_cast<void>(graphcap::make_condition(cap, 0.5));
#endif
  });
}
int main() {}
