// graphcap/detail/hooks.hpp - an entry header: <graphcap/core/detail/hooks.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/detail/hooks.hpp>
