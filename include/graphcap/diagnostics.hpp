// graphcap/diagnostics.hpp - an entry header: <graphcap/inspection/diagnostics.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/inspection/diagnostics.hpp>
