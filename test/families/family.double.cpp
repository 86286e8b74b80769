// The shape family on the CUDA test double's control API: a one-executable switch updates the
// executable graph in place (cudaGraphExecUpdate, no instantiation, no capture), a refused update
// gives the key an executable of its own, and every CUDA call a
// family's capture, switch and replay makes may fail once in turn: the failure surfaces as a
// graphcap::error (thrown, or recorded for its key), nothing is left capturing or leaked, and a
// new family captures and replays correctly afterwards.
#include <graphcap/family.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;

/// A CUDA call of the test's own work failed (the sweep fails those too).
struct own_call_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void own(cudaError_t status) {
  if (status != cudaSuccess) {
    throw own_call_failed(cudaGetErrorName(status));
  }
}

/// Captures keys 1, 2 and 4 (a pool temporary each, a copy to the host), replays two buckets.
/// Returns what the last replay wrote into host[0].
int scenario(bool one_executable, cudaStream_t stream, std::vector<unsigned char>& host) {
  gc::graph_family<> family{{.one_executable = one_executable}};
  const auto result = family.capture_all(
      {1, 2, 4}, stream, [&](std::size_t key, gc::shared_pool_graph::scope& cap) {
        auto* temporary = cap.allocate<unsigned char>(bytes * key);
        own(cudaMemsetAsync(temporary, static_cast<int>(key), bytes * key, cap.stream()));
        own(cudaMemcpyAsync(host.data(), temporary, bytes, cudaMemcpyDeviceToHost, cap.stream()));
        cap.deallocate(temporary);
      });
  result.rethrow_first_failure();
  family.replay_at_least(3, stream);
  family.replay_at_least(1, stream);
  own(cudaStreamSynchronize(stream));
  return host[0];
}

} // namespace

TEST_CASE("graph_family one-executable switch: set-params on the nodes that differ, no update, no "
          "new instantiation") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device{bytes};
  std::vector<unsigned char> host(bytes, 0);
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             gctest::fill_and_copy(s, device, host, static_cast<int>(key));
                           })
              .complete());
  cuda_double::clear_call_counts();
  CHECK(family.replay_at_least(2, stream) == 2); // a switch: the memset's value differs
  CHECK(cuda_double::calls("cudaGraphExecMemsetNodeSetParams") == 1);
  CHECK(cuda_double::calls("cudaGraphExecMemcpyNodeSetParams") == 0); // the copy is the same
  CHECK(cuda_double::calls("cudaGraphExecUpdate") == 0);
  CHECK(family.statistics(2)->patches == 1);
  CHECK(cuda_double::calls("cudaGraphInstantiateWithFlags") == 0);
  CHECK(cuda_double::calls("cudaStreamBeginCapture") == 0); // from the kept template
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
  CHECK(family.last_update().updated());
  cuda_double::clear_call_counts();
  CHECK(family.replay_at_least(2, stream) == 2); // no switch: one launch only
  CHECK(cuda_double::calls("cudaGraphExecUpdate") == 0);
  CHECK(cuda_double::calls("cudaStreamBeginCapture") == 0);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 2));
}

TEST_CASE("graph_family one-executable mode: an update CUDA refuses gives the key its own") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device{bytes};
  gctest::device_buffer<unsigned char> other{bytes};
  std::vector<unsigned char> host(bytes, 0);
  gc::graph_family<> family{{.one_executable = true}};
  // One topology (a memset, then a copy), but key 1 copies to the device where key 2 copies to
  // host memory: CUDA updates no copy node to another kind of memory.
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             if (key == 2) {
                               gctest::fill_and_copy(s, device, host, 2);
                               return;
                             }
                             CUDA_REQUIRE(cudaMemsetAsync(device.get(), 1, bytes, s));
                             CUDA_REQUIRE(cudaMemcpyAsync(other.get(), device.get(), bytes,
                                                          cudaMemcpyDeviceToDevice, s));
                           })
              .complete());
  CHECK(family.executables() == 2);
  CHECK(family.last_update().outcome == gc::update_outcome::reinstantiated);
  CHECK(family.last_update().cuda_result == cudaGraphExecUpdateErrorParametersChanged);
  CHECK_FALSE(family.last_update().reason.empty());
  CHECK(family.statistics(1)->fallbacks == 1); // it was to join 2's group: CUDA refused
  CHECK(family.statistics(1)->switches == 1);
  CHECK(family.statistics(2)->fallbacks == 0); // 2 founded the group: no switch, no fallback
  CHECK(family.statistics(2)->switches == 0);
  cuda_double::clear_call_counts();
  CHECK(family.replay_at_least(2, stream) == 2); // each holds its own: no update, no switch
  CHECK(family.replay_at_least(1, stream) == 1);
  CHECK(cuda_double::calls("cudaGraphExecUpdate") == 0);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 2);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 2));
}

TEST_CASE("graph_family one-executable mode: a fallback is an instantiation in place of an "
          "update, not a topology's first") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device{bytes};
  std::vector<unsigned char> host(bytes, 0);
  int extra = 0;
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(
      family
          .capture_all({1, 2, 3, 4, 5, 6}, stream,
                       [&](std::size_t key, cudaStream_t s) {
                         gctest::fill_and_copy(s, device, host, static_cast<int>(key));
                         if (key % 3 == 0) { // one node more: another topology (3, 6)
                           CUDA_REQUIRE(cudaLaunchHostFunc(
                               s, [](void* counter) { ++*static_cast<int*>(counter); }, &extra));
                         }
                       })
          .complete());
  REQUIRE(family.executables() == 2);
  const auto total = [&](std::size_t gc::family_key_statistics::*count) {
    std::size_t sum = 0;
    for (const std::size_t key : family.keys()) {
      sum += family.statistics(key)->*count;
    }
    return sum;
  };
  // Captured largest first: 6 founds one group, 5 the other; 4, 2, 1 and 3 join by an update.
  CHECK(total(&gc::family_key_statistics::switches) == 4);
  CHECK(total(&gc::family_key_statistics::updates) == 4);
  CHECK(total(&gc::family_key_statistics::fallbacks) == 0);
  cuda_double::clear_call_counts();
  std::size_t switched = 0;
  std::size_t previous_of_group[2] = {3, 1}; // what holds each group's executable: the last joined
  for (int round = 0; round < 50; ++round) {
    for (const std::size_t n : {1, 6, 2, 3, 5, 4}) {
      std::size_t& holder = previous_of_group[n % 3 == 0 ? 0 : 1];
      switched += holder != n ? 1 : 0;
      holder = n;
      REQUIRE(family.replay_at_least(n, stream) == n);
    }
  }
  CHECK(cuda_double::calls("cudaGraphInstantiateWithFlags") == 0); // every switch in place:
  // set-params in the group of 1, 2, 4 and 5; updates in that of 3 and 6 (a host node: no
  // set-params for it, node_patch.hpp)
  CHECK(cuda_double::calls("cudaGraphExecUpdate") + total(&gc::family_key_statistics::patches) ==
        switched);
  CHECK(total(&gc::family_key_statistics::patches) ==
        family.statistics(1)->patches + family.statistics(2)->patches +
            family.statistics(4)->patches + family.statistics(5)->patches);
  CHECK(family.statistics(3)->patches == 0);
  CHECK(family.statistics(6)->patches == 0);
  CHECK(family.executables() == 2); // no key got an executable of its own...
  CHECK(total(&gc::family_key_statistics::switches) == 4 + switched);
  CHECK(total(&gc::family_key_statistics::updates) == 4 + switched);
  CHECK(total(&gc::family_key_statistics::fallbacks) == 0); // ...so no fallback was counted

  // The key that holds its group's executable is evicted: the next key of the group to replay
  // falls back to an instantiation.
  REQUIRE(family.current_key() == 4u);
  REQUIRE(family.evict(4));
  CHECK(family.executables() == 1);
  cuda_double::clear_call_counts();
  CHECK(family.replay_at_least(2, stream) == 2);
  CHECK(cuda_double::calls("cudaGraphInstantiateWithFlags") == 1);
  CHECK(family.last_update().outcome == gc::update_outcome::instantiated);
  CHECK(family.statistics(2)->fallbacks == 1);
  CHECK(total(&gc::family_key_statistics::fallbacks) == 1);
  CHECK(family.executables() == 2);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 2));
}

TEST_CASE("graph_family counts its executables and their measured bytes") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device{bytes};
  std::vector<unsigned char> host(bytes, 0);
  const auto work = [&](std::size_t key, cudaStream_t s) {
    gctest::fill_and_copy(s, device, host, static_cast<int>(key));
  };
  gc::graph_family<> per_key;
  REQUIRE(per_key.capture_all({1, 2, 3}, stream, work).complete());
  gc::graph_family<> shared{{.one_executable = true}};
  cuda_double::clear_call_counts();
  REQUIRE(shared.capture_all({1, 2, 3}, stream, work).complete());
  CHECK(cuda_double::calls("cudaGraphInstantiateWithFlags") == 1);
  CHECK(cuda_double::calls("cudaGraphExecUpdate") == 2);
  CHECK(per_key.executables() == 3);
  CHECK(shared.executables() == 1);
  // The double's executables take no device memory: what is measured is what it reports.
  CHECK(per_key.executable_bytes() == 0);
  CHECK(shared.executable_bytes() == 0);
  CHECK_THAT(per_key.report(), gctest::contains("3 executable graphs"));
}

TEST_CASE("every CUDA call of a shape family may fail once, and a new family works after") {
  cuda_double::reset();
  cudaStream_t stream = nullptr;
  CUDA_REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned char> host(bytes, 0);
  for (const bool one_executable : {false, true}) {
    INFO((one_executable ? "one executable" : "one graph per key"));
    cuda_double::clear_call_counts();
    REQUIRE(scenario(one_executable, stream, host) == 1);
    const std::map<std::string, std::size_t> sites = cuda_double::call_counts();
    REQUIRE(sites.size() >= 8);
    const std::size_t injected =
        gctest::fail_each_call_once(sites, [&](const std::string& function) {
          const gctest::live_objects before;
          try {
            scenario(one_executable, stream, host);
          } catch (const gc::error&) {
            // typed: fine
          } catch (const own_call_failed&) {
            // the test's own call: fine
          }
          static_cast<void>(cudaGetLastError());
          CHECK_FALSE(gctest::capturing(stream));
          CHECK(scenario(one_executable, stream, host) == 1);
          const bool destroy_failed = function.find("Destroy") != std::string::npos;
          CHECK(cuda_double::live_graphs() - before.graphs <= (destroy_failed ? 1U : 0U));
          CHECK(cuda_double::live_execs() - before.execs <= (destroy_failed ? 1U : 0U));
        });
    CHECK(injected >= 10);
  }
  CUDA_REQUIRE(cudaStreamDestroy(stream));
}
