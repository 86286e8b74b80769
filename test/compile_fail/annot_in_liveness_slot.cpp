// expect: satisfaction of [^ ]*liveness_policy<Liveness>[^ ]* \[with Liveness = graphcap::annot::off\]|concept is false for arguments .<graphcap::annot::off, graphcap::policy_kind::liveness>
// The fourth slot takes a liveness policy.
#include <graphcap/graphcap.hpp>

namespace gc = graphcap;
#ifdef GRAPHCAP_CONTROL
using wrong = gc::basic_graph<gc::mode::global, gc::pool::off, gc::annot::off, gc::liveness::off>;
#else
using wrong = gc::basic_graph<gc::mode::global, gc::pool::off, gc::annot::off, gc::annot::off>;
#endif
int main() {
  wrong graph;
}
