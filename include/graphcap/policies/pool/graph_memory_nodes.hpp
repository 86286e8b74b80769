// graphcap/policies/pool/graph_memory_nodes.hpp - an entry header:
// <graphcap/pool/graph_memory_nodes.hpp> (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/graph_memory_nodes.hpp>
