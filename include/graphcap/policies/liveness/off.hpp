// graphcap/policies/liveness/off.hpp - an entry header: <graphcap/core/liveness_off.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/liveness_off.hpp>
