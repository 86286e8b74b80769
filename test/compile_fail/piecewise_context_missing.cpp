// expect: replay it with replay\(stream, ctx\)
// A piecewise_graph<Graph, Context> hands its islands a Context at every replay: replay(stream)
// without one does not compile.
#include <graphcap/piecewise.hpp>

#include <cuda_runtime_api.h>

struct step_context {
  int length = 0;
};

void step(graphcap::piecewise_graph<graphcap::graph, step_context>& graph, cudaStream_t stream) {
  step_context ctx;
#ifdef GRAPHCAP_CONTROL
  graph.replay(stream, ctx);
#else
  graph.replay(stream);
  static_cast<void>(ctx);
#endif
}
int main() {}
