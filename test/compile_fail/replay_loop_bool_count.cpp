// expect: takes a count of replays, not a bool
// replay_loop::replay(stream, n) takes any integer count (a negative one is refused at run time),
// but not a bool, which converts silently from a condition written where a count was meant.
#include <graphcap/graphcap.hpp>
#include <graphcap/replay_loop.hpp>

void work(graphcap::graph& graph, cudaStream_t stream) {
  graphcap::replay_loop loop{graph};
#ifdef GRAPHCAP_CONTROL
  loop.replay(stream, 1);
#else
  loop.replay(stream, true);
#endif
}
int main() {}
