// expect: satisfaction of [^ ]*capture_mode<Mode>[^ ]* \[with Mode = graphcap::pool::off\]|concept is false for arguments .<graphcap::pool::off, graphcap::policy_kind::mode>
// The first slot takes a capture mode (mode::global, mode::thread_local_, mode::relaxed).
#include <graphcap/graphcap.hpp>

namespace gc = graphcap;
#ifdef GRAPHCAP_CONTROL
using wrong = gc::basic_graph<gc::mode::relaxed, gc::pool::off, gc::annot::off, gc::liveness::off>;
#else
using wrong = gc::basic_graph<gc::pool::off, gc::pool::off, gc::annot::off, gc::liveness::off>;
#endif
int main() {
  wrong graph;
}
