// The runtime's last error around graphcap's errors (docs/errors.md): graphcap clears the last
// error its own failed runtime call left, and leaves alone a user's pending error that no call
// of graphcap's replaced (a failure graphcap found itself, a driver call's, a status that set
// none, a capture discarded because the work threw). The double keeps one last error per thread,
// overwritten by every failing runtime call and left alone by driver calls, as CUDA does.
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>

#include <stdexcept>
#include <vector>

namespace gc = graphcap;

namespace {

/// The user's own error, pending (not yet collected with cudaGetLastError).
cudaError_t users_pending_error() {
  CHECK(cudaSetDevice(99) == cudaErrorInvalidDevice);
  REQUIRE(cudaPeekAtLastError() == cudaErrorInvalidDevice);
  return cudaErrorInvalidDevice;
}

} // namespace

TEST_CASE("last error: graphcap's own failed runtime call leaves no last error behind") {
  cuda_double::reset();
  gctest::stream stream;
  static_cast<void>(users_pending_error());
  // CUDA keeps one last error per thread: the failed call replaces the user's with its own,
  // which graphcap clears once it has reported it.
  cuda_double::fail_call("cudaStreamBeginCapture", cudaErrorUnknown);
  gc::graph graph;
  CHECK_THROWS_AS(graph.capture(stream, [](cudaStream_t) {}), gc::capture_error);
  CHECK(cudaPeekAtLastError() == cudaSuccess);
}

TEST_CASE("last error: throw_cuda for a status no runtime call left pending keeps the user's") {
  cuda_double::reset();
  const cudaError_t users = users_pending_error();
  CHECK_THROWS_AS(gc::detail::throw_cuda(cudaErrorNotSupported, "graphcap::replay_loop"),
                  gc::cuda_error);
  CHECK(cudaPeekAtLastError() == users);
  gc::detail::ignore(cudaErrorInvalidValue); // a cleanup status that set no last error either
  CHECK(cudaPeekAtLastError() == users);
  static_cast<void>(cudaGetLastError());
}

TEST_CASE("last error: a sleepable pool's growth failing in a driver call keeps the user's "
          "pending error") {
  cuda_double::reset();
  gctest::stream stream;
  std::vector<unsigned char> host(4096, 0);
  const cudaError_t users = users_pending_error();
  cuda_double::fail_call("cuMemCreate", cudaErrorMemoryAllocation); // a driver call: no last error
  gc::graph_with<gc::pool::sleepable> graph;
  CHECK_THROWS_AS(gctest::capture_fill(graph, host, 1), gc::out_of_memory_error);
  CHECK(cudaPeekAtLastError() == users);
  static_cast<void>(cudaGetLastError());
}

TEST_CASE("last error: a capture whose work throws keeps the user's pending error") {
  cuda_double::reset();
  gctest::stream stream;
  const cudaError_t users = users_pending_error();
  gc::graph graph;
  CHECK_THROWS_AS(graph.capture(stream, [](cudaStream_t) { throw std::runtime_error("work"); }),
                  std::runtime_error);
  CHECK_FALSE(gctest::capturing(stream));
  CHECK(cudaPeekAtLastError() == users); // the discard of the capture failed no call
  static_cast<void>(cudaGetLastError());
}
