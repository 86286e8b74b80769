// graphcap/rebind.hpp - entry header: a captured graph's inputs changed without recapture
// (graphcap::rebinder, rebind_input, rebinding, all_inputs, rebind_error; the rebinders of a
// piecewise_graph and of a graph_family; device_value, a scalar kernels read through memory;
// tag_nodes, set_enabled: nodes on and off). See docs/rebinding.md.
#pragma once

#include <graphcap/rebind/device_value.hpp>
#include <graphcap/rebind/family_rebinder.hpp>
#include <graphcap/rebind/node_switch.hpp>
#include <graphcap/rebind/piecewise_rebinder.hpp>
#include <graphcap/rebind/rebind_error.hpp>
#include <graphcap/rebind/rebinder.hpp>
