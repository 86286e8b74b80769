// expect: needs a work callable as work\(key, scope&\) or work\(key, cudaStream_t\)
// capture_all() calls its work with the key and the scope or the stream.
#include <graphcap/family.hpp>

void capture(graphcap::graph_family<>& family, cudaStream_t stream) {
#ifdef GRAPHCAP_CONTROL
  family.capture_all({1, 2}, stream, [](std::size_t, cudaStream_t) {});
#else
  family.capture_all({1, 2}, stream, [](cudaStream_t) {});
#endif
}
int main() {}
