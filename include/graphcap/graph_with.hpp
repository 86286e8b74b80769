// graphcap/graph_with.hpp - a deprecated entry header (0.5; removed in 0.6): include
// <graphcap/graphcap.hpp>. It forwards to <graphcap/core/graph_with.hpp> and warns unless
// GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS is defined (docs/design.md, "The floor plan"; README.md,
// "Features, and what to include").
#pragma once

#include <graphcap/config.hpp>

#if !defined(GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC warning                                                                                \
    "graphcap: <graphcap/graph_with.hpp> is deprecated (removed in 0.6): include <graphcap/graphcap.hpp> (GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS silences this)"
#endif

#include <graphcap/core/graph_with.hpp>
