// expect: pool::none is spelled pool::off since 0\.3
// The 0.2 spelling pool::none still names the lean Pool policy for one release, deprecated with
// a message that gives the new spelling (made an error here, so that the test sees it; the
// control spells it pool::off and compiles).
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#include <graphcap/graphcap.hpp>

#include <type_traits>

int main() {
#ifdef GRAPHCAP_CONTROL
  const graphcap::pool::off policy;
#else
  const graphcap::pool::none policy;
#endif
  static_assert(std::is_same_v<graphcap::graph_with<std::remove_const_t<decltype(policy)>>,
                               graphcap::lean_graph>);
}
