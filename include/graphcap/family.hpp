// graphcap/family.hpp - an entry header: <graphcap/families/graph_family.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/families/graph_family.hpp>
