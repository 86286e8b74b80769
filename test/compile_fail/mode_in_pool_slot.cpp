// expect: satisfaction of [^ ]*pool_strategy<Pool>[^ ]* \[with Pool = graphcap::mode::relaxed\]|concept is false for arguments .<graphcap::mode::relaxed, graphcap::policy_kind::pool>
// Policies have fixed slots: <Mode, Pool, Annot, Liveness>. A mode in the Pool slot is refused
// with the slot's concept name.
#include <graphcap/graphcap.hpp>

namespace gc = graphcap;
#ifdef GRAPHCAP_CONTROL
using wrong = gc::basic_graph<gc::mode::global, gc::pool::off, gc::annot::off, gc::liveness::off>;
#else
using wrong =
    gc::basic_graph<gc::mode::global, gc::mode::relaxed, gc::annot::off, gc::liveness::off>;
#endif
int main() {
  wrong graph;
}
