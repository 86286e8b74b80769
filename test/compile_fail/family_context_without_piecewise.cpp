// expect: this family's graphs take no context
// replay_at_least(n, stream, ctx) hands a context to the islands of a family of
// piecewise_graph<Graph, Context>; a family of graphs without islands is refused at compile time
// with one error saying what to call instead.
#include <graphcap/family.hpp>

#include <cuda_runtime_api.h>

struct step_values {
  int length = 0;
};

void replay(graphcap::graph_family<>& family, cudaStream_t stream) {
  step_values now;
#ifdef GRAPHCAP_CONTROL
  static_cast<void>(now);
  family.replay_at_least(1, stream);
#else
  family.replay_at_least(1, stream, now);
#endif
}
int main() {}
