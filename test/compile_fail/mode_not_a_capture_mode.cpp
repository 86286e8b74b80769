// expect: satisfaction of [^ ]*capture_mode<Mode>[^ ]* \[with Mode = my_mode\]|type constraint failed for .my_mode.
// A home-made mode must name a cudaStreamCaptureMode and hold no state.
#include <graphcap/graphcap.hpp>

namespace gc = graphcap;
struct my_mode {
  using policy_category = gc::detail::mode_category;
#ifdef GRAPHCAP_CONTROL
  static constexpr cudaStreamCaptureMode value = cudaStreamCaptureModeRelaxed;
#else
  int value = 2; // state, and not a constant
#endif
};
using config = gc::basic_graph<my_mode, gc::pool::off, gc::annot::off, gc::liveness::off>;
int main() {
  config graph;
}
