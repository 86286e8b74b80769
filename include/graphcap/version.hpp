// graphcap/version.hpp - the library's version.
#pragma once

#include <graphcap/config.hpp>

#define GRAPHCAP_VERSION_MAJOR 0
#define GRAPHCAP_VERSION_MINOR 4
#define GRAPHCAP_VERSION_PATCH 0

namespace graphcap {

/// The major version (GRAPHCAP_VERSION_MAJOR): 0 while the API may still change.
inline constexpr int version_major = GRAPHCAP_VERSION_MAJOR;
/// The minor version (GRAPHCAP_VERSION_MINOR): a package of another minor version is not used.
inline constexpr int version_minor = GRAPHCAP_VERSION_MINOR;
/// The patch version (GRAPHCAP_VERSION_PATCH).
inline constexpr int version_patch = GRAPHCAP_VERSION_PATCH;

} // namespace graphcap
