// graphcap/graphcap.hpp - the graph, every policy but annot::on, and the ready-made
// configurations. The lean core alone is <graphcap/basic_graph.hpp>; annotations (CUPTI) are
// <graphcap/annotations.hpp>.
//
//   #include <graphcap/graphcap.hpp>
//
//   graphcap::lean_graph g;                        // every optional feature off
//   graphcap::graph g;                             // torch.cuda.graph's defaults: private pool
//   g.capture([&](cudaStream_t s) { step<<<blocks, threads, 0, s>>>(in, out, n); });
//   for (int i = 0; i < steps; ++i) g.replay(stream);
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/basic_graph.hpp>
#include <graphcap/buffer.hpp>
#include <graphcap/error.hpp>
#include <graphcap/graph_cache.hpp>
#include <graphcap/graph_with.hpp>
#include <graphcap/liveness.hpp>
#include <graphcap/policies/mode.hpp>
#include <graphcap/policies/pool/graph_memory_nodes.hpp>
#include <graphcap/policies/pool/none.hpp>
#include <graphcap/policies/pool/slab.hpp>
#include <graphcap/pool_handle.hpp>
#include <graphcap/pool_statistics.hpp>
#include <graphcap/scope.hpp>
#include <graphcap/stream_ref.hpp>
#include <graphcap/update.hpp>
#include <graphcap/version.hpp>

namespace graphcap {

/// torch.cuda.graph's defaults: global capture mode and a private pool for the memory allocated
/// during the capture (scope::allocate); annotations and liveness checking off.
using graph = basic_graph<mode::global, pool::private_pool, annot::off, liveness::off>;

} // namespace graphcap
