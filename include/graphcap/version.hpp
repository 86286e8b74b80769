// graphcap/version.hpp - the library's version.
#pragma once

#include <graphcap/config.hpp>

#define GRAPHCAP_VERSION_MAJOR 0
#define GRAPHCAP_VERSION_MINOR 2
#define GRAPHCAP_VERSION_PATCH 0

namespace graphcap {

inline constexpr int version_major = GRAPHCAP_VERSION_MAJOR;
inline constexpr int version_minor = GRAPHCAP_VERSION_MINOR;
inline constexpr int version_patch = GRAPHCAP_VERSION_PATCH;

} // namespace graphcap
