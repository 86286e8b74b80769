// graphcap/library_stream.hpp - an entry header: <graphcap/control_flow/library_stream.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/library_stream.hpp>
