// test/support/diagnostics_skip.hpp - a test of capture diagnostics skips where another tool
// (compute-sanitizer, Nsight Systems or Compute, cuda-gdb) holds CUPTI's one subscriber, and
// fails where CUPTI is unavailable for any other reason.
//
//   const gc::capture_diagnostics diagnostics;
//   GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics);
#pragma once

#include "catch.hpp"
#include "skip.hpp"

#include <string>

#define GCTEST_SKIP_UNLESS_DIAGNOSTICS(diagnostics)                                                \
  do {                                                                                             \
    if (!(diagnostics).available()) {                                                              \
      const std::string gctest_reason = (diagnostics).unavailable_reason();                        \
      INFO(gctest_reason);                                                                         \
      REQUIRE(gctest_reason.find("held by") != std::string::npos);                                 \
      GCTEST_SKIP("CUPTI is held by another tool: " << gctest_reason);                             \
    }                                                                                              \
  } while (false)
