// graphcap/piecewise.hpp - an entry header: piecewise graphs, graph segments with eager islands
// between them (<graphcap/piecewise/piecewise_graph.hpp>), and graphs embedded in a capture
// (<graphcap/piecewise/embed.hpp>); docs/piecewise.md.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/piecewise/bridge_error.hpp>
#include <graphcap/piecewise/embed.hpp>
#include <graphcap/piecewise/island_error.hpp>
#include <graphcap/piecewise/piecewise_graph.hpp>
