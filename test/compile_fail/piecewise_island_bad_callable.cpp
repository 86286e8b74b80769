// expect: eager\(island\) needs a callable taking the replay's stream
// An island runs at every replay on the replay's stream: it must take that stream.
#include <graphcap/piecewise.hpp>

#include <cuda_runtime_api.h>

void capture(graphcap::piecewise_graph<>& step, cudaStream_t stream) {
  step.capture(stream, [](auto& cap) {
#ifdef GRAPHCAP_CONTROL
    cap.eager([](cudaStream_t /*replay_stream*/) {});
#else
    cap.eager([](int /*not_a_stream*/, int /*nor_this*/) {});
#endif
  });
}
int main() {}
