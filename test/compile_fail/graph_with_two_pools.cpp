// expect: two pool policies given
// A graph has one pool policy.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using config = graphcap::graph_with<graphcap::pool::none, graphcap::annot::off>;
#else
using config =
    graphcap::graph_with<graphcap::pool::none, graphcap::annot::off, graphcap::pool::none>;
#endif
int main() {
  config graph;
}
