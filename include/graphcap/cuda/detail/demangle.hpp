// graphcap/cuda/detail/demangle.hpp - graphcap's one demangler: kernel names as people read them,
// for annotations (node_annotation::kernel, traces) and liveness messages ("kernel scale(float*)").
//
// The only header that includes <cxxabi.h>, and only where GRAPHCAP_HAS_CXXABI (config.hpp) says
// it exists; elsewhere names stay as the driver gives them.
#pragma once

#include <graphcap/config.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#if GRAPHCAP_HAS_CXXABI
#include <cxxabi.h>
#endif

namespace graphcap::detail {

/// A C++ kernel's readable name ("_Z5scalePffi": "scale(float*, float, int)"). A name that is
/// not mangled (an extern "C" kernel: "relu") or that does not demangle stays as it is:
/// __cxa_demangle would read "a" as the type "signed char". `name` must not be null.
inline std::string demangled(const char* name) {
#if GRAPHCAP_HAS_CXXABI
  if (name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    // NOLINTNEXTLINE: __cxa_demangle's buffer is malloc'ed
    const std::unique_ptr<char, decltype(&std::free)> readable{
        abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free};
    if (status == 0 && readable != nullptr) {
      return readable.get();
    }
  }
#endif
  return name;
}

/// demangled() of a name that is not null-terminated.
inline std::string demangled(std::string_view name) {
  return demangled(std::string{name}.c_str());
}

} // namespace graphcap::detail
