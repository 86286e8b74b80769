// graphcap/pool/default_graph.hpp - graphcap::graph, the configuration of torch.cuda.graph.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/annot_off.hpp>
#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/liveness_off.hpp>
#include <graphcap/core/mode.hpp>
#include <graphcap/pool/slab.hpp>

namespace graphcap {

/// torch.cuda.graph's defaults: global capture mode and a private pool for the memory allocated
/// during the capture (scope::allocate); annotations and liveness checking off.
using graph = basic_graph<mode::global, pool::private_pool, annot::off, liveness::off>;

} // namespace graphcap
