// graphcap/sleepable_pool.hpp - an entry header: <graphcap/pool/sleepable.hpp> (docs/design.md,
// "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/sleepable.hpp>
