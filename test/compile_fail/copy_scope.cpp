// expect: use of deleted function [^ ]*graphcap::basic_scope<Graph, Kind>::basic_scope\(const graphcap::basic_scope<Graph, Kind>&\)|function .graphcap::basic_scope<Graph, Kind>::basic_scope\(const graphcap::basic_scope<Graph, Kind> &\).* it is a deleted function
// A capture scope stands for one capture: it cannot be copied (two ends of one capture).
#include <graphcap/graphcap.hpp>
#include <utility>

void work(graphcap::lean_graph& graph) {
  auto cap = graph.begin_capture();
#ifdef GRAPHCAP_CONTROL
  auto moved = std::move(cap);
  moved.end();
#else
  auto copy = cap;
  copy.end();
#endif
}
int main() {}
