// graphcap/device_loop.hpp - an entry header: <graphcap/control_flow/device_loop.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/device_loop.hpp>
