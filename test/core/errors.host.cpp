// Host tests: graphcap's exceptions say what failed and what to do.
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/error.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <string>

TEST_CASE("cuda_error names the call, the CUDA error and its message") {
  const graphcap::cuda_error failure(cudaErrorInvalidValue, "cudaGraphLaunch");
  const std::string text = failure.what();
  CHECK(failure.code() == cudaErrorInvalidValue);
  CHECK(failure.call() == "cudaGraphLaunch");
  CHECK_THAT(text, gctest::contains("cudaGraphLaunch"));
  CHECK_THAT(text, gctest::contains("cudaErrorInvalidValue"));
  CHECK_THAT(text, gctest::contains(cudaGetErrorString(cudaErrorInvalidValue)));
  CHECK_THAT(text, !gctest::contains("Hint"));
}

TEST_CASE("cuda_error carries a hint when one is known") {
  const graphcap::cuda_error failure(cudaErrorStreamCaptureImplicit, "cudaStreamEndCapture",
                                     graphcap::detail::hint_for(cudaErrorStreamCaptureImplicit));
  CHECK_THAT(std::string(failure.what()), gctest::contains("Hint: a blocking capture stream"));
  CHECK_THAT(std::string(failure.what()), gctest::contains("cudaStreamNonBlocking"));
}

TEST_CASE("every capture failure has a hint that says what to change") {
  for (const cudaError_t code :
       {cudaErrorStreamCaptureUnsupported, cudaErrorStreamCaptureInvalidated,
        cudaErrorStreamCaptureUnjoined, cudaErrorStreamCaptureUnmatched,
        cudaErrorStreamCaptureWrongThread, cudaErrorStreamCaptureImplicit,
        cudaErrorStreamCaptureIsolation, cudaErrorStreamCaptureMerge, cudaErrorInsufficientDriver,
        cudaErrorNoDevice}) {
    INFO(cudaGetErrorName(code));
    CHECK_FALSE(graphcap::detail::hint_for(code).empty());
  }
  CHECK(graphcap::detail::hint_for(cudaErrorStreamCaptureUnjoined).find("cudaStreamWaitEvent") !=
        std::string_view::npos);
}

TEST_CASE("throw_cuda throws the requested type and clears the last error") {
  REQUIRE_THROWS_AS(graphcap::detail::throw_cuda<graphcap::capture_error>(
                        cudaErrorStreamCaptureInvalidated, "cudaStreamEndCapture"),
                    graphcap::capture_error);
  REQUIRE_THROWS_AS(graphcap::detail::check(cudaErrorInvalidValue, "cudaX"), graphcap::cuda_error);
  REQUIRE_NOTHROW(graphcap::detail::check(cudaSuccess, "cudaX"));
  gctest::require_no_last_error();
}

TEST_CASE("a capture_error is a cuda_error is a graphcap::error") {
  try {
    graphcap::detail::throw_cuda<graphcap::capture_error>(cudaErrorStreamCaptureUnjoined,
                                                          "cudaStreamEndCapture");
    FAIL("no exception");
  } catch (const graphcap::cuda_error& failure) {
    CHECK(failure.code() == cudaErrorStreamCaptureUnjoined);
    CHECK_THAT(std::string(failure.what()), gctest::contains("never joined back"));
  }
}
