// expect: (cached_graph|family_graph) is spelled shared_pool_graph since 0\.3
// The 0.2 names of the keyed stores' default graph (graph_cache's cached_graph, graph_family's
// family_graph: one type) still compile for one release, deprecated with a message that gives
// the new name (made an error here, so that the test sees it; the control uses the new name).
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>

#include <type_traits>

int main() {
#ifdef GRAPHCAP_CONTROL
  const graphcap::shared_pool_graph* cached = nullptr;
  const graphcap::shared_pool_graph* family = nullptr;
#else
  const graphcap::cached_graph* cached = nullptr;
  const graphcap::family_graph* family = nullptr;
#endif
  static_assert(std::is_same_v<decltype(cached), decltype(family)>);
  static_assert(std::is_same_v<decltype(cached), const graphcap::shared_pool_graph*>);
}
