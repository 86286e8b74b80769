// graphcap/annotations/node_type.hpp - an entry header: <graphcap/cuda/node_type.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/node_type.hpp>
