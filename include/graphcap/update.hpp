// graphcap/update.hpp - an entry header: <graphcap/core/update.hpp> (docs/design.md, "The floor
// plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/update.hpp>
