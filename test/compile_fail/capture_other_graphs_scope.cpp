// expect: capture_work_takes_the_scope_of_another_graph<graphcap::basic_graph<graphcap::mode::global, graphcap::pool::off, graphcap::annot::off, graphcap::liveness::off>, graphcap::basic_graph<graphcap::mode::global, graphcap::pool::private_pool|CapturedGraph=graphcap::basic_graph<graphcap::mode::global, graphcap::pool::off, graphcap::annot::off, graphcap::liveness::off>, GraphOfTheWorksScope=graphcap::basic_graph<graphcap::mode::global, graphcap::pool::private_pool
// A lean_graph's capture() given work that takes graphcap::graph's scope: the error names both
// graph types, the captured one first.
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
#ifdef GRAPHCAP_CONTROL
  graph.capture([](graphcap::lean_graph::scope& cap) { static_cast<void>(cap.stream()); });
#else
  graph.capture([](graphcap::graph::scope& cap) { static_cast<void>(cap.stream()); });
#endif
}
int main() {}
