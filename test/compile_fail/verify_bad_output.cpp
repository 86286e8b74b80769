// expect: a verify\(\) output is a graphcap::buffer<T>, a std::span<T> or
// A bare pointer says nothing of how many elements to compare.
#include <graphcap/graphcap.hpp>
#include <graphcap/verify.hpp>

void check(graphcap::lean_graph& graph, float* out) {
  const auto work = [](cudaStream_t) {};
#ifdef GRAPHCAP_CONTROL
  static_cast<void>(graphcap::verify(graph, work, graphcap::output(out, 4)));
#else
  static_cast<void>(graphcap::verify(graph, work, out));
#endif
}
int main() {}
