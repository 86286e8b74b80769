// test/symbols/diag.cpp - the control for capture diagnostics: lean.cpp with a
// graphcap::capture_diagnostics switched on around the capture. The symbol check must fail on it,
// naming CUPTI and the diagnostics' code, so that lean.cpp passing shows that a program without
// <graphcap/diagnostics.hpp> compiles none of it.
#include "work.hpp"

#include <graphcap/diagnostics.hpp>
#include <graphcap/graphcap.hpp>

void capture_and_replay(cudaStream_t stream, void* buffer, std::size_t bytes, int replays) {
  const graphcap::capture_diagnostics diagnostics;
  graphcap::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { symbols::user_work(s, buffer, bytes); });
  for (int i = 0; i < replays; ++i) {
    graph.replay(stream);
  }
}

void replay_only(graphcap::lean_graph& graph, cudaStream_t stream) {
  graph.replay(stream);
}
