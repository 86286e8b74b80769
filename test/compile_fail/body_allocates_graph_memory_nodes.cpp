// expect: allocate\(\) in a conditional body needs a slab pool
// CUDA allows no memory node in a conditional body; pool::graph_memory_nodes allocates with one,
// so allocating from such a graph's pool inside a body does not compile.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

void work(graphcap::graph_with<graphcap::pool::graph_memory_nodes>& graph) {
  graph.capture([](auto& cap) {
    const graphcap::condition flag = graphcap::make_condition(cap, 1);
#ifdef GRAPHCAP_CONTROL
    static_cast<void>(cap.template allocate<float>(16)); // outside the body: a memory node is fine
    graphcap::if_(cap, flag, [](cudaStream_t) {});
#else
    graphcap::if_(cap, flag,
                  [](auto& body) { static_cast<void>(body.template allocate<float>(16)); });
#endif
  });
}
int main() {}
