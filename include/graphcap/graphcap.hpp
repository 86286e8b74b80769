// graphcap/graphcap.hpp - everything: the graph, its policies, and the ready-made configurations.
//
//   #include <graphcap/graphcap.hpp>
//
//   graphcap::lean_graph g;                        // every optional feature off
//   graphcap::graph g;                             // torch.cuda.graph's defaults: private pool
//   g.capture([&](cudaStream_t s) { step<<<blocks, threads, 0, s>>>(in, out, n); });
//   for (int i = 0; i < steps; ++i) g.replay(stream);
#pragma once

#include <graphcap/basic_graph.hpp>
#include <graphcap/buffer.hpp>
#include <graphcap/error.hpp>
#include <graphcap/graph_cache.hpp>
#include <graphcap/graph_with.hpp>
#include <graphcap/policies/annot.hpp>
#include <graphcap/policies/liveness.hpp>
#include <graphcap/policies/mode.hpp>
#include <graphcap/policies/pool.hpp>
#include <graphcap/pool_handle.hpp>
#include <graphcap/stream.hpp>
#include <graphcap/update.hpp>
#include <graphcap/version.hpp>

namespace graphcap {

/// Every optional feature off: global capture mode, no pool, no annotations, no liveness check.
/// Replay is exactly one cudaGraphLaunch and its error check.
using lean_graph = basic_graph<mode::global, pool::none, annot::off, liveness::off>;

/// torch.cuda.graph's defaults: global capture mode and a private pool for the memory allocated
/// during the capture (scope::allocate); annotations and liveness checking off.
using graph = basic_graph<mode::global, pool::private_pool, annot::off, liveness::off>;

} // namespace graphcap
