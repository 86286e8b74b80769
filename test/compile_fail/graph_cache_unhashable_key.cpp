// expect: graph_cache<Key> needs a hashable key
// The cache finds graphs by key: std::hash must know the key, or a Hash type must be given.
#include <graphcap/graphcap.hpp>

#include <cstddef>

struct shape {
  int batch;
  bool operator==(const shape&) const = default;
};
struct shape_hash {
  std::size_t operator()(const shape& key) const noexcept {
    return static_cast<std::size_t>(key.batch);
  }
};

int main() {
#ifdef GRAPHCAP_CONTROL
  graphcap::graph_cache<shape, graphcap::shared_pool_graph, shape_hash> cache;
#else
  graphcap::graph_cache<shape> cache;
#endif
  static_cast<void>(cache.size());
}
