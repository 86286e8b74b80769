// graphcap/replay_loop.hpp - an entry header: <graphcap/control_flow/replay_loop.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/replay_loop.hpp>
