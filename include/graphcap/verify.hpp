// graphcap/verify.hpp - an entry header: <graphcap/inspection/verify.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/inspection/verify.hpp>
