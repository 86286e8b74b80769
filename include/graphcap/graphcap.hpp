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

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/graph_with.hpp>
#include <graphcap/core/mode.hpp>
#include <graphcap/core/pool_off.hpp>
#include <graphcap/core/scope.hpp>
#include <graphcap/core/stream_ref.hpp>
#include <graphcap/core/update.hpp>
#include <graphcap/error.hpp>
#include <graphcap/families/graph_cache.hpp>
#include <graphcap/liveness/declared_inputs.hpp>
#include <graphcap/pool/buffer.hpp>
#include <graphcap/pool/default_graph.hpp>
#include <graphcap/pool/graph_memory_nodes.hpp>
#include <graphcap/pool/pool_handle.hpp>
#include <graphcap/pool/pool_statistics.hpp>
#include <graphcap/pool/slab.hpp>
#include <graphcap/version.hpp>
