// graphcap/repeat.cuh - a deprecated entry header (0.5; removed in 0.6): include
// <graphcap/device_loop.cuh> (from a .cu file). It forwards to
// <graphcap/control_flow/device_loop.cuh> and warns unless GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS
// is defined (docs/design.md, "The floor plan"; README.md, "Features, and what to include").
#pragma once

#include <graphcap/config.hpp>

#if !defined(GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC warning                                                                                \
    "graphcap: <graphcap/repeat.cuh> is deprecated (removed in 0.6): include <graphcap/device_loop.cuh> (from a .cu file) (GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS silences this)"
#endif

#include <graphcap/control_flow/device_loop.cuh>
