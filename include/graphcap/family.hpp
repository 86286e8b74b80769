// graphcap/family.hpp - an entry header: <graphcap/families/shape_family.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/families/shape_family.hpp>
