// Host tests: graphcap's one demangler (cuda/detail/demangle.hpp), which annotations and the
// liveness check's messages both name kernels with.
#include <graphcap/config.hpp>
#include <graphcap/cuda/detail/demangle.hpp>

#include "catch.hpp"

#include <string>
#include <string_view>

using graphcap::detail::demangled;

TEST_CASE("a mangled C++ kernel name is demangled") {
  if (!GRAPHCAP_HAS_CXXABI) {
    CHECK(demangled("_Z5scalePffi") == "_Z5scalePffi"); // no demangler: as the driver gives it
    return;
  }
  CHECK(demangled("_Z5scalePffi") == "scale(float*, float, int)");
  CHECK(demangled("_ZN6layers4gemmIfEEvPKT_PS1_i") ==
        "void layers::gemm<float>(float const*, float*, int)");
}

TEST_CASE("a name that is not mangled (an extern \"C\" kernel) stays as it is") {
  CHECK(demangled("relu") == "relu");
  CHECK(demangled("a") == "a"); // __cxa_demangle alone would read it as the type "signed char"
  CHECK(demangled("i") == "i");
  CHECK(demangled("Z5scalePffi") == "Z5scalePffi");
  CHECK(demangled("").empty());
}

TEST_CASE("a name that starts like a mangled one but does not demangle stays as it is") {
  CHECK(demangled("_Z") == "_Z");
  CHECK(demangled("_Znot a mangled name") == "_Znot a mangled name");
  CHECK(demangled("_") == "_");
}

TEST_CASE("a name that is not null-terminated is read to its end only") {
  const std::string_view text = "_Z5scalePffi and what follows";
  const std::string_view name = text.substr(0, 12);
  CHECK(demangled(name) == demangled("_Z5scalePffi"));
  CHECK(demangled(std::string_view{"relu6"}.substr(0, 4)) == "relu");
}
