// test/symbols/control.cpp - the check's control: lean.cpp with liveness::check switched on. The
// symbol check must fail on it, naming the driver and policy code the policy brings, or the check
// could pass for the wrong reason.
#include "work.hpp"

#include <graphcap/graphcap.hpp>

using checked_graph = graphcap::basic_graph<graphcap::mode::global, graphcap::pool::off,
                                            graphcap::annot::off, graphcap::liveness::check>;

void capture_and_replay(cudaStream_t stream, void* buffer, std::size_t bytes, int replays) {
  checked_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { symbols::user_work(s, buffer, bytes); });
  for (int i = 0; i < replays; ++i) {
    graph.replay(stream);
  }
}

void replay_only(checked_graph& graph, cudaStream_t stream) {
  graph.replay(stream);
}
