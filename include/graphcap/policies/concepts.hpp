// graphcap/policies/concepts.hpp - an entry header: <graphcap/core/policy.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
