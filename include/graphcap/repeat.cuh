// graphcap/repeat.cuh - an entry header: <graphcap/control_flow/repeat.cuh> (docs/design.md, "The
// floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/repeat.cuh>
