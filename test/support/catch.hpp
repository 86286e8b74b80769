// test/support/catch.hpp - one include for Catch2 v2 (Debian 12: 2.13) and v3 (GPU machine: 3.4).
//
// Tests use only what both versions share, plus:
//   gctest::contains(text)   the substring matcher (v2 Contains, v3 ContainsSubstring)
//   GCTEST_SKIP(message)     leaves the test case reported as skipped (support/skip.hpp)
#pragma once

#include "skip.hpp"

#include <string>

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#define GRAPHCAP_CATCH_MAJOR 3
namespace gctest {
inline auto contains(const std::string& text) {
  return Catch::Matchers::ContainsSubstring(text);
}
} // namespace gctest
#else
#include <catch2/catch.hpp>
#define GRAPHCAP_CATCH_MAJOR 2
namespace gctest {
inline auto contains(const std::string& text) {
  return Catch::Matchers::Contains(text);
}
} // namespace gctest
#endif
