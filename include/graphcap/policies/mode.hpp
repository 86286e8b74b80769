// graphcap/policies/mode.hpp - an entry header: <graphcap/core/mode.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/mode.hpp>
