// graphcap/scope.hpp - an entry header: <graphcap/core/scope.hpp> (docs/design.md, "The floor
// plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/scope.hpp>
