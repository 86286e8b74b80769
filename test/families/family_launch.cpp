// Runtime tests: one-executable families and what cudaGraphExecUpdate does not compare. Keys whose
// kernels run with other launch attributes (a cluster shape) or another function must not share
// an executable: on the H200 an update to a template of another cluster shape succeeds and the
// executable keeps its old clusters (benchmark/probes/exec_update_attributes.cu). Kernels from
// family_kernels.cu, host models on the double.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "family_kernels.cuh"

#include <cstddef>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

/// The cluster shape of key `n`: clusters of two blocks for even keys, of one for odd keys.
unsigned cluster_of(std::size_t n) {
  return n % 2 == 0 ? 2U : 1U;
}

/// A stream and one int on the device that a replay writes.
struct launch_fixture {
  launch_fixture() { gctest::model_family_kernels(); }
  gctest::stream stream;
  gctest::device_buffer<int> out{1};

  int replay_read(gc::graph_family<>& family, std::size_t n) {
    CUDA_REQUIRE(cudaMemsetAsync(out.get(), 0xff, sizeof(int), stream));
    CHECK(family.replay_at_least(n, stream) == n);
    int seen = 0;
    CUDA_REQUIRE(cudaMemcpyAsync(&seen, out.get(), sizeof seen, cudaMemcpyDeviceToHost, stream));
    stream.synchronize();
    return seen;
  }
};

} // namespace

TEST_CASE_METHOD(
    launch_fixture,
    "one-executable families give keys of another cluster shape their own executable") {
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 2, 3, 4}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             CUDA_REQUIRE(
                                 gctest::launch_cluster_report(s, out.get(), cluster_of(key)));
                           })
              .complete());
  // One topology, two cluster shapes: an executable per shape, each key's switch an update.
  CHECK(family.executables() == 2);
  CHECK(family.statistics(4)->own_executable.empty()); // the first of its topology
  CHECK(family.statistics(4)->fallbacks == 0);         // founded its group: no fallback
  CHECK(family.statistics(3)->fallbacks == 1); // a group of its topology existed: a fallback
  CHECK_THAT(family.statistics(3)->own_executable, gctest::contains("cluster dimension (1x1x1"));
  CHECK_THAT(family.statistics(3)->own_executable, gctest::contains("has 2x1x1"));
  CHECK(family.statistics(2)->updates == 1); // joined 4's executable
  CHECK(family.statistics(1)->updates == 1); // joined 3's
  CHECK_THAT(family.report(), gctest::contains("key 3: an executable graph of its own"));
  for (const std::size_t n : {1, 2, 3, 4, 2, 1, 4, 3, 3, 4}) {
    INFO("key " << n);
    CHECK(replay_read(family, n) == static_cast<int>(cluster_of(n)));
  }
  CHECK(family.executables() == 2);
}

TEST_CASE_METHOD(launch_fixture,
                 "one-executable families give keys whose kernel is another function their own "
                 "executable") {
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             if (key == 1) {
                               CUDA_REQUIRE(gctest::launch_cluster_report(s, out.get(), 1));
                             } else {
                               gctest::launch_other_report(s, out.get());
                             }
                           })
              .complete());
  CHECK(family.executables() == 2);
  CHECK_THAT(family.statistics(1)->own_executable, gctest::contains("another function"));
  CHECK(replay_read(family, 1) == 1);
  CHECK(replay_read(family, 2) == 2);
  CHECK(replay_read(family, 1) == 1);
}

TEST_CASE_METHOD(launch_fixture,
                 "one-executable families still share across keys of one cluster shape") {
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({2, 4, 6}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             CUDA_REQUIRE(
                                 gctest::launch_cluster_report(s, out.get(), cluster_of(key)));
                           })
              .complete());
  CHECK(family.executables() == 1);
  for (const std::size_t n : {2, 4, 6}) {
    CHECK(family.statistics(n)->own_executable.empty());
    CHECK(replay_read(family, n) == 2);
  }
}
