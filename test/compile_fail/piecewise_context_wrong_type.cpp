// expect: the context given is of another type
// replay(stream, ctx) of a piecewise_graph<Graph, Context> takes that Context: a value of
// another type (here the step's lengths where the graph's islands take its whole context) does
// not compile.
#include <graphcap/piecewise.hpp>

#include <cuda_runtime_api.h>

struct step_context {
  int length = 0;
};
struct other_context {
  int length = 0;
};

void step(graphcap::piecewise_graph<graphcap::graph, step_context>& graph, cudaStream_t stream) {
#ifdef GRAPHCAP_CONTROL
  step_context ctx;
#else
  other_context ctx;
#endif
  graph.replay(stream, ctx);
}
int main() {}
