// expect: two pool policies given
// A graph has one pool policy.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using config = graphcap::graph_with<graphcap::pool::off, graphcap::annot::off>;
#else
using config = graphcap::graph_with<graphcap::pool::off, graphcap::annot::off, graphcap::pool::off>;
#endif
int main() {
  config graph;
}
