// expect: allocate\(\) needs a graph whose pool policy allocates
// pool::off has no memory to hand out during a capture.
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
  graph.capture([](graphcap::lean_graph::scope& cap) {
#ifdef GRAPHCAP_CONTROL
    static_cast<void>(cap.stream());
#else
    float* scratch = cap.allocate<float>(256);
    static_cast<void>(scratch);
#endif
  });
}
int main() {}
