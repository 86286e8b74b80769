// graphcap/repeat.hpp - an entry header: <graphcap/control_flow/repeat.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/repeat.hpp>
