// graphcap/families/shared_pool_graph.hpp - the graph both keyed stores (graph_cache,
// graph_family) hold unless told otherwise.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/mode.hpp>
#include <graphcap/pool/slab.hpp>

namespace graphcap {

/// A graph for a store of many graphs sharing one pool: thread-local capture mode (a server's
/// other threads go on launching while one captures), pool::shared (every graph of the store
/// draws from the store's pool), annotations and liveness off. (Spelled cached_graph and
/// family_graph before 0.3: one type under two names; both stay, deprecated, for one release.)
using shared_pool_graph = basic_graph<mode::thread_local_, pool::shared, annot::off, liveness::off>;

} // namespace graphcap
