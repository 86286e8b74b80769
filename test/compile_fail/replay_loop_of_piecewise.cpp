// expect: a piecewise_graph runs eager islands between its segments, which no copy can hold
// replay_loop unrolls one graph into copies chained in one launch; a piecewise graph's islands
// run on the host between its segments, so it is refused by name (docs/piecewise.md).
#include <graphcap/piecewise.hpp>
#include <graphcap/replay_loop.hpp>

#ifdef GRAPHCAP_CONTROL
using looped = graphcap::graph;
#else
using looped = graphcap::piecewise_graph<>;
#endif

void run(looped& step, cudaStream_t stream) {
  graphcap::replay_loop loop{step};
  loop.replay(stream, 10);
}
int main() {}
