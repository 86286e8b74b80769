// expect: capture_kind::body>[^ ]* has no member named [^ ]*eager|has no member "eager"
// An island cannot sit inside a conditional body: a body's scope is one segment's graph, and has
// no eager(), so the call does not compile where the type tells (a body that reaches the
// piecewise scope itself is refused at capture: test/piecewise/piecewise.cpp).
#include <graphcap/control_flow.hpp>
#include <graphcap/piecewise.hpp>

#include <cuda_runtime_api.h>

void capture(graphcap::piecewise_graph<>& step, cudaStream_t stream) {
  step.capture(stream, [](auto& cap) {
    auto flag = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, flag, [](auto& body) {
#ifdef GRAPHCAP_CONTROL
      static_cast<void>(body.stream());
#else
      body.eager([](cudaStream_t /*s*/) {});
#endif
    });
  });
}
int main() {}
