// graphcap/graph_with.hpp - an entry header: <graphcap/core/graph_with.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/graph_with.hpp>
