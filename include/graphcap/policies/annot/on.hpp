// graphcap/policies/annot/on.hpp - an entry header: <graphcap/annotations/on.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/annotations/on.hpp>
