// graphcap/basic_graph.hpp - an entry header: <graphcap/core/basic_graph.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
