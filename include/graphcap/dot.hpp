// graphcap/dot.hpp - an entry header: <graphcap/inspection/dot.hpp> (docs/design.md, "The floor
// plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/inspection/dot.hpp>
