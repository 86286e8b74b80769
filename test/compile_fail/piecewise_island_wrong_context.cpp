// expect: the island's context parameter is not the graph's Context
// An island of a piecewise_graph<Graph, Context> takes (cudaStream_t, Context&) or
// (cudaStream_t): one taking another context type is refused at the capture.
#include <graphcap/piecewise.hpp>

#include <cuda_runtime_api.h>

struct step_context {
  int length = 0;
};
struct other_context {
  int length = 0;
};

void capture(graphcap::piecewise_graph<graphcap::graph, step_context>& graph, cudaStream_t stream) {
  graph.capture(stream, [](auto& cap) {
#ifdef GRAPHCAP_CONTROL
    cap.eager([](cudaStream_t /*s*/, step_context& ctx) { ctx.length = 1; });
#else
    cap.eager([](cudaStream_t /*s*/, other_context& ctx) { ctx.length = 1; });
#endif
  });
}
int main() {}
