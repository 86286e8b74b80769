// expect: capture\(work\) needs a callable
// capture() calls its work with the scope, the stream, or nothing.
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
#ifdef GRAPHCAP_CONTROL
  graph.capture([](cudaStream_t stream) { static_cast<void>(stream); });
#else
  graph.capture([](int first, int second) { static_cast<void>(first + second); });
#endif
}
int main() {}
