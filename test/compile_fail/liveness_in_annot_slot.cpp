// expect: satisfaction of [^ ]*annotation_policy<Annot>[^ ]* \[with Annot = graphcap::liveness::off\]|concept is false for arguments .<graphcap::liveness::off, graphcap::policy_kind::annot>
// The third slot takes an annotation policy.
#include <graphcap/graphcap.hpp>

namespace gc = graphcap;
#ifdef GRAPHCAP_CONTROL
using wrong = gc::basic_graph<gc::mode::global, gc::pool::off, gc::annot::off, gc::liveness::off>;
#else
using wrong =
    gc::basic_graph<gc::mode::global, gc::pool::off, gc::liveness::off, gc::liveness::off>;
#endif
int main() {
  wrong graph;
}
