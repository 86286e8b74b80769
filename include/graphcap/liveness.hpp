// graphcap/liveness.hpp - liveness::check, the policy that refuses to replay a graph whose
// inputs were freed (docs/liveness.md). <graphcap/graphcap.hpp> includes it too; the lean core
// (<graphcap/basic_graph.hpp>) does not, and with it none of the driver API.
//
//   graphcap::graph_with<graphcap::liveness::check> g;
//   g.capture(stream, [&](cudaStream_t s) { scale<<<blocks, threads, 0, s>>>(input, n); });
//   cudaFree(input);
//   g.replay(stream); // throws graphcap::liveness_error, naming the freed input; nothing runs
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/basic_graph.hpp>
#include <graphcap/policies/liveness/check.hpp>
