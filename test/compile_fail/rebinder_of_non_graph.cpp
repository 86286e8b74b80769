// expect: graphcap::rebinder takes a basic_graph
// A rebinder patches a basic_graph, a piecewise_graph or a graph_family; anything else is refused
// with a readable message (a piecewise graph compiles: its control).
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>

#ifdef GRAPHCAP_CONTROL
using rebound = graphcap::piecewise_graph<graphcap::graph>;
#else
using rebound = graphcap::basic_scope<graphcap::graph, graphcap::capture_kind::fresh>;
#endif

int main() {
  graphcap::rebinder<rebound>* inputs = nullptr;
  if (inputs != nullptr) {
    inputs->rebind(nullptr, nullptr);
  }
}
