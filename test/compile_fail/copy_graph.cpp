// expect: use of deleted function [^ ]*graphcap::basic_graph<Mode, Pool, Annot, Liveness>::basic_graph\(const graphcap::basic_graph<Mode, Pool, Annot, Liveness>&\)|function .graphcap::basic_graph<Mode, Pool, Annot, Liveness>::basic_graph\(const graphcap::basic_graph<Mode, Pool, Annot, Liveness> &\).* it is a deleted function
// A graph owns CUDA handles: it moves, it never copies.
#include <graphcap/graphcap.hpp>
#include <utility>

int main() {
  graphcap::lean_graph original;
#ifdef GRAPHCAP_CONTROL
  graphcap::lean_graph moved = std::move(original);
#else
  graphcap::lean_graph copy = original;
#endif
}
