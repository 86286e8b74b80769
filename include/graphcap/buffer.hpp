// graphcap/buffer.hpp - an entry header: <graphcap/pool/buffer.hpp> (docs/design.md, "The floor
// plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/pool/buffer.hpp>
