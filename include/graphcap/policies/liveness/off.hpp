// graphcap/policies/liveness/off.hpp - a deprecated entry header (0.5; removed in 0.6): include
// <graphcap/basic_graph.hpp>. It forwards to <graphcap/core/liveness_off.hpp> and warns unless
// GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS is defined (docs/design.md, "The floor plan"; README.md,
// "Features, and what to include").
#pragma once

#include <graphcap/config.hpp>

#if !defined(GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC warning                                                                                \
    "graphcap: <graphcap/policies/liveness/off.hpp> is deprecated (removed in 0.6): include <graphcap/basic_graph.hpp> (GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS silences this)"
#endif

#include <graphcap/core/liveness_off.hpp>
