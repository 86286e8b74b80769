// graphcap/pool_handle.hpp - an entry header: <graphcap/pool/pool_handle.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/pool_handle.hpp>
