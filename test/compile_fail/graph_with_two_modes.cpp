// expect: two capture modes given
// A graph has one capture mode.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using config = graphcap::graph_with<graphcap::mode::global>;
#else
using config = graphcap::graph_with<graphcap::mode::global, graphcap::mode::relaxed>;
#endif
int main() {
  config graph;
}
