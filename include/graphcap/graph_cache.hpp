// graphcap/graph_cache.hpp - an entry header: <graphcap/families/graph_cache.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/families/graph_cache.hpp>
