// expect: needs a graph whose pool policy allocates
// pool::off has no memory for a library's temporaries either.
#include <graphcap/allocator.hpp>
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
  graph.capture([](graphcap::lean_graph::scope& cap) {
#ifdef GRAPHCAP_CONTROL
    static_cast<void>(cap.stream());
#else
    graphcap::capture_allocator allocator{cap};
    static_cast<void>(allocator.allocate(256));
#endif
  });
}
int main() {}
