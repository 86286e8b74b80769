// graphcap/stream_ref.hpp - an entry header: <graphcap/core/stream_ref.hpp> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/stream_ref.hpp>
