// expect: the segments of a piecewise graph cannot be rebound yet
// A rebinder patches one basic_graph's nodes; a piecewise graph's segments are refused with a
// readable message.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/rebind.hpp>

#ifdef GRAPHCAP_CONTROL
using rebound = graphcap::graph;
#else
using rebound = graphcap::piecewise_graph<graphcap::graph>;
#endif

int main() {
  rebound graph{graphcap::keep_graph};
  graphcap::rebinder<rebound>* inputs = nullptr;
  if (inputs != nullptr) {
    inputs->rebind(nullptr, nullptr);
  }
  static_cast<void>(graph);
}
