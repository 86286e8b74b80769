// expect: has no member.*active
// mark() in a body of a graph without annot::on compiles and tags nothing, as it does in the
// parent scope (code written for annotated graphs compiles unchanged); what only an annotating
// marker has (active(), close()) does not compile there.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#ifdef GRAPHCAP_CONTROL
#include <graphcap/annotations.hpp>
using tested = graphcap::graph_with<graphcap::annot::on>;
#else
using tested = graphcap::lean_graph;
#endif

void work(tested& graph) {
  graph.capture([](auto& cap) {
    const graphcap::condition flag = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, flag, [](auto& body) {
      auto region = body.mark("step");
      static_cast<void>(region.active());
    });
  });
}
int main() {}
