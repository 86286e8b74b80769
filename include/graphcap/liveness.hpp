// graphcap/liveness.hpp - an entry header: <graphcap/liveness/declared_inputs.hpp>,
// <graphcap/liveness/check.hpp> (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/liveness/check.hpp>
#include <graphcap/liveness/declared_inputs.hpp>
