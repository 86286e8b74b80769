// test/support/skip.hpp - a test case that cannot check what it is for is skipped, not passed.
//
//   GCTEST_SKIP("CUPTI is held by another tool: the ids are not checked");
//
// records the skip in a process-wide flag, prints "SKIPPED: <message>" and returns from the test
// case. The same in Catch2 v2 (which has no SKIP) and v3 (whose all-skipped exit code, 4, CTest
// would read as a failure): support/main.cpp turns a run with no failure and a skip into
// GRAPHCAP_SKIP_RETURN_CODE, which CTest's SKIP_RETURN_CODE reports as not run. A failure before
// the skip still fails the run. Each CTest entry runs one test case (catch_discover_tests, or one
// tag for the stress tests), so the skip is that one test's.
#pragma once

#include <cstdio>
#include <sstream>
#include <string>

namespace gctest {

/// Whether a test case of this process called GCTEST_SKIP (read by support/main.cpp).
inline bool& skip_recorded() noexcept {
  static bool skipped = false;
  return skipped;
}

/// Records a skip and says why on stdout (CTest keeps the output of a skipped test).
inline void record_skip(const std::string& why) {
  skip_recorded() = true;
  std::printf("SKIPPED: %s\n", why.c_str());
  std::fflush(stdout);
}

} // namespace gctest

/// Leaves the test case as skipped; `message` may stream (`"a " << b`). Only in a test case's
/// own body (it returns from the enclosing function).
#define GCTEST_SKIP(message)                                                                       \
  do {                                                                                             \
    std::ostringstream gctest_skip_message;                                                        \
    gctest_skip_message << message;                                                                \
    ::gctest::record_skip(gctest_skip_message.str());                                              \
    return;                                                                                        \
  } while (false)
