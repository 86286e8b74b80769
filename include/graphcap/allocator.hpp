// graphcap/allocator.hpp - an entry header: <graphcap/pool/allocator.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/allocator.hpp>
