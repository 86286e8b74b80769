// graphcap/policies/pool/slab.hpp - an entry header: <graphcap/pool/slab.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/slab.hpp>
