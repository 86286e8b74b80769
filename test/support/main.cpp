// test/support/main.cpp - the Catch2 main of every runtime test executable.
//
// Built in three flavours:
//   plain                          host tests (and tests on the CUDA test double)
//   GRAPHCAP_TEST_NEEDS_DEVICE     tests on the real runtime: without a usable device the process
//                                  exits with GRAPHCAP_SKIP_RETURN_CODE, which CTest's
//                                  SKIP_RETURN_CODE reports as "not run", never as passed
//   GRAPHCAP_TEST_NEEDS_NO_DEVICE  tests of the no-driver error path: skipped where a device is
// Listing tests (CTest's test discovery) never checks for a device. A run in which a test case
// called GCTEST_SKIP (support/skip.hpp) and nothing failed exits with GRAPHCAP_SKIP_RETURN_CODE
// too: skipped, never passed; a failure wins over a skip.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include "skip.hpp"

#include <cstdio>
#include <cstring>

#if defined(GRAPHCAP_TEST_NEEDS_DEVICE) || defined(GRAPHCAP_TEST_NEEDS_NO_DEVICE)
#include <cuda_runtime_api.h>

namespace {

bool only_lists_tests(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--list", 6) == 0) {
      return true;
    }
  }
  return false;
}

} // namespace
#endif

int main(int argc, char** argv) {
#if defined(GRAPHCAP_TEST_NEEDS_DEVICE) || defined(GRAPHCAP_TEST_NEEDS_NO_DEVICE)
  if (!only_lists_tests(argc, argv)) {
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    static_cast<void>(cudaGetLastError());
    const bool has_device = status == cudaSuccess && devices > 0;
#ifdef GRAPHCAP_TEST_NEEDS_DEVICE
#ifndef GRAPHCAP_TEST_MIN_DEVICES
#define GRAPHCAP_TEST_MIN_DEVICES 1
#endif
    if (!has_device || devices < GRAPHCAP_TEST_MIN_DEVICES) {
      std::printf("SKIPPED: %d CUDA device(s) (%s): this test needs %d and was not run\n",
                  status == cudaSuccess ? devices : 0,
                  status == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(status),
                  GRAPHCAP_TEST_MIN_DEVICES);
      return GRAPHCAP_SKIP_RETURN_CODE;
    }
#else
    if (has_device) {
      std::printf("SKIPPED: a CUDA device is present: this test checks the no-device error path\n");
      return GRAPHCAP_SKIP_RETURN_CODE;
    }
#endif
  }
#endif
  const int failures = Catch::Session().run(argc, argv);
  if (failures == 0 && gctest::skip_recorded()) {
    return GRAPHCAP_SKIP_RETURN_CODE;
  }
  return failures;
}
