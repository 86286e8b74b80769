// The skip facility's own test (support/skip.hpp), run through CTest by support/exit_code.cmake:
// a test case that calls GCTEST_SKIP makes the process exit with GRAPHCAP_SKIP_RETURN_CODE (77,
// read by CTest as skipped), a failure before the skip still fails, and a run without a skip
// passes with 0. Not a discovered test binary: [fails_then_skips] must fail.
#include "catch.hpp"

TEST_CASE("a test case that skips", "[skips]") {
  CHECK(1 + 1 == 2);
  GCTEST_SKIP("the probe skips on purpose (" << 42 << ")");
  FAIL("GCTEST_SKIP did not leave the test case");
}

TEST_CASE("a test case that fails, then skips", "[fails_then_skips]") {
  CHECK(1 + 1 == 3); // a failure wins over the skip that follows
  GCTEST_SKIP("the probe skips after a failure");
}

TEST_CASE("a test case that passes", "[passes]") {
  CHECK(gctest::skip_recorded() == false); // no skip unless a test case asks for one
}
