// expect: every argument must be a graphcap policy
// graph_with takes graphcap policies only.
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
using config = graphcap::graph_with<graphcap::mode::relaxed>;
#else
using config = graphcap::graph_with<graphcap::mode::relaxed, int>;
#endif
int main() {
  config graph;
}
