// graphcap/policies/liveness/check.hpp - an entry header: <graphcap/liveness/check.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/liveness/check.hpp>
