// graphcap/policies/annot/off.hpp - an entry header: <graphcap/core/annot_off.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/annot_off.hpp>
