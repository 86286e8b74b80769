// graphcap/control_flow.hpp - an entry header: <graphcap/control_flow/conditional.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/conditional.hpp>
