// expect: deleted
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
