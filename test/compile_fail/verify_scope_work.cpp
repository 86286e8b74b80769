// expect: verify\(\) runs its work eagerly, outside any capture
// A capture scope exists only during a capture: verify()'s eager run cannot hand one out.
#include <graphcap/graphcap.hpp>
#include <graphcap/verify.hpp>

void check(graphcap::lean_graph& graph, float* out) {
#ifdef GRAPHCAP_CONTROL
  const auto work = [](cudaStream_t) {};
#else
  const auto work = [](graphcap::lean_graph::scope& cap) { static_cast<void>(cap.stream()); };
#endif
  static_cast<void>(graphcap::verify(graph, work, graphcap::output(out, 4, "out")));
}
int main() {}
