// graphcap/pool_statistics.hpp - an entry header: <graphcap/pool/pool_statistics.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/pool_statistics.hpp>
