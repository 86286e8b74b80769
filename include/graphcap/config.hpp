// graphcap/config.hpp - the library's configuration macros, each spelled once.
//
//   GRAPHCAP_COLD              marks an out-of-line error path (gnu::cold, noinline)
//   GRAPHCAP_HAS_CXXABI        1 where <cxxabi.h> can demangle kernel names
//                              (cuda/detail/demangle.hpp)
//   GRAPHCAP_HOST_DEVICE       __host__ __device__ under nvcc (values kernels read: conditions)
//   GRAPHCAP_NVTX_REGIONS      defined by the user: register pool blocks with NVTX for
//                              compute-sanitizer (pool/detail/nvtx_regions.hpp); off by default
//
// Only the detection macros live here; headers that need what they detect include it themselves
// (<cxxabi.h> only in cuda/detail/demangle.hpp), so that the lean core includes nothing it does
// not use.
#pragma once

// graphcap is C++20. Below it, the compilation stops here with one message instead of dozens of
// errors from the first concept (a missing header is fatal in every compiler, so the #include
// after the #error ends it). Every public header includes this one first.
#if !defined(__cplusplus) || __cplusplus < 202002L
#error "graphcap needs C++20: -std=c++20 (CMake: link graphcap::graphcap); docs/building.md"
#include <graphcap/compilation_stops_here_below_cxx20> // NOLINT: intentionally missing
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GRAPHCAP_COLD [[gnu::cold, gnu::noinline]]
#else
#define GRAPHCAP_COLD
#endif

#if __has_include(<cxxabi.h>)
#define GRAPHCAP_HAS_CXXABI 1
#else
#define GRAPHCAP_HAS_CXXABI 0
#endif

#if defined(__CUDACC__)
#define GRAPHCAP_HOST_DEVICE __host__ __device__
#else
#define GRAPHCAP_HOST_DEVICE
#endif
