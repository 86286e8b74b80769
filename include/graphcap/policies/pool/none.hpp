// graphcap/policies/pool/none.hpp - an entry header: <graphcap/core/pool_off.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/pool_off.hpp>
