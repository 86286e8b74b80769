// graphcap/rebind.hpp - entry header: rebinding a captured graph's inputs without recapture
// (graphcap::rebinder, rebind_input, rebinding, all_inputs, rebind_error). See docs/rebinding.md.
#pragma once

#include <graphcap/rebind/rebind_error.hpp>
#include <graphcap/rebind/rebinder.hpp>
