// graphcap/policies/concepts.hpp - an entry header: <graphcap/core/concepts.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/concepts.hpp>
