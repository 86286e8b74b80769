// expect: a verify\(\) output must be writable
// verify() poisons every output before the replay: read-only memory cannot be an output.
#include <graphcap/graphcap.hpp>
#include <graphcap/verify.hpp>

#include <span>

void check(graphcap::lean_graph& graph, float* out) {
  const auto work = [](cudaStream_t) {};
#ifdef GRAPHCAP_CONTROL
  static_cast<void>(graphcap::verify(graph, work, std::span<float>{out, 4}));
#else
  static_cast<void>(graphcap::verify(graph, work, std::span<const float>{out, 4}));
#endif
}
int main() {}
