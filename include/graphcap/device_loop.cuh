// graphcap/device_loop.cuh - an entry header: <graphcap/control_flow/device_loop.cuh>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/device_loop.cuh>
