// test/symbols/lean.cpp - a capture and replays with every graphcap policy off (lean_graph),
// compiled with -O2: the object code whose undefined symbols check.sh compares with raw.cpp's.
#include "work.hpp"

#include <graphcap/graphcap.hpp>

#include <cstdint>
#include <type_traits>

// The sizes (test/compile/checks.hpp holds the full set): the lean graph is the handles a
// hand-written program keeps (template, executable, capture stream, device, node count, state),
// and every off policy is an empty type, stored in no byte.
static_assert(sizeof(graphcap::lean_graph) == 3 * sizeof(void*) + 2 * sizeof(std::uint32_t) + 8);
static_assert(std::is_empty_v<graphcap::pool::off> && std::is_empty_v<graphcap::annot::off> &&
              std::is_empty_v<graphcap::liveness::off> && std::is_empty_v<graphcap::mode::global>);

/// Capture the work, replay it `replays` times, destroy the graph.
void capture_and_replay(cudaStream_t stream, void* buffer, std::size_t bytes, int replays) {
  graphcap::lean_graph graph;
  graph.capture(stream, [&](cudaStream_t s) { symbols::user_work(s, buffer, bytes); });
  for (int i = 0; i < replays; ++i) {
    graph.replay(stream);
  }
}

/// The replay alone, the hot path of a latency-bound loop.
void replay_only(graphcap::lean_graph& graph, cudaStream_t stream) {
  graph.replay(stream);
}
