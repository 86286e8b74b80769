// expect: conversion from .*capture_kind::update>.* to .*capture_kind::fresh>
// A recapture scope updates the executable graph at its end(); held as a plain scope it would
// instantiate anew. The two are different types with no conversion between them.
#include <graphcap/graphcap.hpp>

void work(graphcap::lean_graph& graph) {
#ifdef GRAPHCAP_CONTROL
  auto cap = graph.begin_recapture();
#else
  graphcap::lean_graph::scope cap = graph.begin_recapture();
#endif
  cap.end();
}
int main() {}
