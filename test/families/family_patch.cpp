// Runtime tests: the patch switch of a one-executable family (families/detail/node_patch.hpp).
// Keys of one topology differ in a kernel's grid and arguments, a memset's and a copy's width; a
// kernel and the rest are the same. A switch sets only the nodes that differ, and every replay
// writes its own key's values (both backends). On the double the executable after each switch is
// compared field by field with a fresh instantiation of the key's template and with an executable
// updated by cudaGraphExecUpdate, the calls a switch makes are counted, and a set CUDA refuses
// falls back to the update. Kernels from family_kernels.cu, host models on the double.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "family_kernels.cuh"

#ifdef GCTEST_ON_DOUBLE
#include <cuda_double/control.hpp>
#endif

#include <cstddef>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr int per_key = 64; // elements per key

/// The buffers the work writes and the stream it runs on.
struct patch_fixture {
  patch_fixture() { gctest::model_family_kernels(); }
  gctest::stream stream;
  gctest::device_buffer<int> out{4 * per_key};
  gctest::device_buffer<int> fixed{per_key};
  gctest::device_buffer<int> copy{4 * per_key};
  gctest::device_buffer<int> cleared{4 * per_key};

  /// Five nodes per key: a memset and a copy of the key's width, a kernel of the key's grid and
  /// value, and a kernel the same for every key (the pool adds no node since #48).
  auto work() {
    return [this](std::size_t key, cudaStream_t s) {
      const int count = static_cast<int>(key) * per_key;
      const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(int);
      CUDA_REQUIRE(cudaMemsetAsync(cleared.get(), 0, bytes, s));
      gctest::launch_fill(s, out.get(), count, static_cast<int>(key));
      gctest::launch_fill(s, fixed.get(), per_key, 7);
      CUDA_REQUIRE(cudaMemcpyAsync(copy.get(), out.get(), bytes, cudaMemcpyDeviceToDevice, s));
    };
  }

  /// Replays the bucket of `n` and checks that the copy holds `n`'s values.
  void replay_checked(gc::graph_family<>& family, std::size_t n) {
    CUDA_REQUIRE(cudaMemsetAsync(copy.get(), 0xff, 4 * per_key * sizeof(int), stream));
    REQUIRE(family.replay_at_least(n, stream) == n);
    std::vector<int> seen(4 * per_key, 0);
    CUDA_REQUIRE(cudaMemcpyAsync(seen.data(), copy.get(), seen.size() * sizeof(int),
                                 cudaMemcpyDeviceToHost, stream));
    stream.synchronize();
    const std::size_t count = n * per_key;
    CHECK(std::vector<int>(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(count)) ==
          std::vector<int>(count, static_cast<int>(n)));
    CHECK(std::vector<int>(seen.begin() + static_cast<std::ptrdiff_t>(count), seen.end()) ==
          std::vector<int>(seen.size() - count, -1)); // beyond its width: the copy's poison
  }
};

} // namespace

TEST_CASE_METHOD(patch_fixture,
                 "one-executable families switch by setting the nodes that differ, and every "
                 "replay runs its key") {
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family.capture_all({1, 2, 3, 4}, stream, work()).complete());
  REQUIRE(family.executables() == 1);
  for (const std::size_t n : {4, 1, 3, 2, 2, 4, 1, 1, 3, 4}) {
    INFO("key " << n);
    replay_checked(family, n);
  }
  std::size_t patches = 0;
  for (const std::size_t key : family.keys()) {
    patches += family.statistics(key)->patches;
    CHECK(family.statistics(key)->fallbacks == 0);
  }
  CHECK(patches == 8); // every switch at a replay (4 1 3 2 4 1 3 4): a patch, no update
  CHECK(family.executables() == 1);
  CHECK_THAT(family.report(), gctest::contains("patched"));
}

TEST_CASE_METHOD(patch_fixture,
                 "verify_first_switch checks each key's first switch once, against its work run "
                 "eagerly") {
  std::size_t runs = 0; // captures and eager runs of the work
  gc::graph_family<> family{
      {.one_executable = true, .verify_first_switch = true, .verify_outputs = [&](std::size_t key) {
         return std::vector<gc::family_output>{{copy.get(), key * per_key * sizeof(int), "copy"},
                                               {out.get(), key * per_key * sizeof(int), "out"}};
       }}};
  REQUIRE(family
              .capture_all({1, 2, 3, 4}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             ++runs;
                             work()(key, s);
                           })
              .complete());
  REQUIRE(runs == 4);
  for (const std::size_t n : {4, 1, 3, 2, 2, 4, 1}) {
    INFO("key " << n);
    replay_checked(family, n); // a first switch runs the work once eagerly, and verifies
  }
  CHECK(runs == 8); // the first switches of 4, 1, 3 and 2; none of the later ones
  CHECK(family.executables() == 1);
}

TEST_CASE_METHOD(patch_fixture,
                 "verify_first_switch: a key whose replay differs from its work is a "
                 "family_verify_error naming it, and gets an executable of its own") {
  bool eager_differs = false; // the eager run writes other values than the capture did
  gc::graph_family<> family{
      {.one_executable = true, .verify_first_switch = true, .verify_outputs = [&](std::size_t key) {
         return std::vector<gc::family_output>{
             {cleared.get(), key * per_key * sizeof(int), "cleared"}};
       }}};
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             const std::size_t bytes = key * per_key * sizeof(int);
                             CUDA_REQUIRE(
                                 cudaMemsetAsync(cleared.get(), eager_differs ? 9 : 0, bytes, s));
                             gctest::launch_fill(s, out.get(), static_cast<int>(key) * per_key,
                                                 static_cast<int>(key));
                           })
              .complete());
  REQUIRE(family.current_key() == 1u);
  eager_differs = true;
  std::string message;
  try {
    family.replay_at_least(2, stream); // the switch to 2 is its first: verified, and differs
  } catch (const gc::family_verify_error& mismatch) {
    message = mismatch.what();
  }
  CHECK_THAT(message, gctest::contains("graph_family key 2:"));
  CHECK_THAT(message, gctest::contains("cleared"));
  eager_differs = false;
  CHECK(family.replay_at_least(1, stream) == 1); // its group held none: instantiated again
  CHECK_THAT(family.statistics(2)->own_executable, gctest::contains("verify_first_switch"));
  CHECK(family.statistics(2)->fallbacks == 1);
  CHECK(family.executables() == 2);              // 2's own; 1's group instantiated again for 1
  CHECK(family.replay_at_least(2, stream) == 2); // its own executable: no switch, no check
  stream.synchronize();
}

TEST_CASE_METHOD(patch_fixture,
                 "verify_first_switch without verify_outputs is an error saying what to set") {
  gc::graph_family<> family{{.one_executable = true, .verify_first_switch = true}};
  REQUIRE(family.capture_all({1, 2}, stream, work()).complete());
  CHECK_THROWS_WITH(family.replay_at_least(2, stream),
                    gctest::contains("set family_options::verify_outputs"));
}

#ifdef GCTEST_ON_DOUBLE

namespace {

/// The executable of a fresh instantiation of `graph`, as the double holds it.
std::vector<cuda_double::exec_node_fields> instantiated(cudaGraph_t graph) {
  cudaGraphExec_t exec = nullptr;
  CUDA_REQUIRE(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<cuda_double::exec_node_fields> fields = cuda_double::exec_nodes(exec);
  CUDA_REQUIRE(cudaGraphExecDestroy(exec));
  return fields;
}

} // namespace

TEST_CASE_METHOD(patch_fixture,
                 "a patch switch leaves the executable as an update or an instantiation would, "
                 "field by field") {
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family.capture_all({1, 2, 3, 4}, stream, work()).complete());
  REQUIRE(family.current_key() == 1u);
  // The update route, beside the family's: an executable of key 1's template, updated to each
  // key's template in turn.
  cudaGraphExec_t updated = nullptr;
  CUDA_REQUIRE(cudaGraphInstantiate(&updated, family.find(1)->raw_graph(), 0));
  std::size_t previous = 1;
  for (const std::size_t n : {4, 1, 3, 2, 2, 4, 1}) {
    INFO("key " << n << " after " << previous);
    cuda_double::clear_call_counts();
    REQUIRE(family.replay_at_least(n, stream) == n);
    const std::size_t sets_kernel = cuda_double::calls("cuGraphExecKernelNodeSetParams");
    const std::size_t sets_memset = cuda_double::calls("cudaGraphExecMemsetNodeSetParams");
    const std::size_t sets_copy = cuda_double::calls("cudaGraphExecMemcpyNodeSetParams");
    const std::size_t sets_event = cuda_double::calls("cudaGraphExecEventRecordNodeSetEvent");
    CHECK(cuda_double::calls("cudaGraphExecUpdate") == 0);
    CHECK(cuda_double::calls("cudaGraphInstantiateWithFlags") == 0);
    const std::size_t changed = n == previous ? 0 : 1;
    CHECK(sets_kernel == changed); // the fill of the key's width; the fixed fill is never set
    CHECK(sets_memset == changed);
    CHECK(sets_copy == changed);
    CHECK(sets_event == 0); // no event-record node of the pool's (#48: no completion marker)
    const gc::shared_pool_graph* holder = family.find(n);
    REQUIRE(holder != nullptr);
    const std::vector<cuda_double::exec_node_fields> patched =
        cuda_double::exec_nodes(holder->raw_exec());
    CHECK(cuda_double::exec_difference(patched, instantiated(holder->raw_graph())).empty());
    cudaGraphExecUpdateResultInfo info{};
    CUDA_REQUIRE(cudaGraphExecUpdate(updated, holder->raw_graph(), &info));
    CHECK(cuda_double::exec_difference(patched, cuda_double::exec_nodes(updated)).empty());
    previous = n;
  }
  CUDA_REQUIRE(cudaGraphExecDestroy(updated));
}

TEST_CASE("a set CUDA refuses midway falls back to the update, and the executable is the key's") {
  cuda_double::reset();
  gctest::model_family_kernels();
  gctest::stream stream;
  gctest::device_buffer<int> out{per_key};
  gctest::device_buffer<int> plain{per_key};
  int* pooled = nullptr; // stream-ordered pool memory: no copy node's operand moves into it
  CUDA_REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&pooled), per_key * sizeof(int), stream));
  stream.synchronize();
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t key, cudaStream_t s) {
                             gctest::launch_fill(s, out.get(), per_key, static_cast<int>(key));
                             CUDA_REQUIRE(cudaMemcpyAsync(key == 1 ? plain.get() : pooled,
                                                          out.get(), per_key * sizeof(int),
                                                          cudaMemcpyDeviceToDevice, s));
                           })
              .complete());
  REQUIRE(family.executables() == 1); // the update took key 1 into key 2's executable
  cuda_double::clear_call_counts();
  REQUIRE(family.replay_at_least(2, stream) == 2);
  CHECK(cuda_double::calls("cuGraphExecKernelNodeSetParams") == 1);   // set: the fill's value
  CHECK(cuda_double::calls("cudaGraphExecMemcpyNodeSetParams") == 1); // refused
  CHECK(cuda_double::calls("cudaGraphExecUpdate") == 1);              // the fallback
  CHECK(cudaGetLastError() == cudaSuccess); // the refused set's error is graphcap's own
  CHECK(family.last_update().updated());
  CHECK(family.statistics(2)->patches == 0);
  CHECK(family.statistics(2)->updates == 1);
  const gc::shared_pool_graph* holder = family.find(2);
  REQUIRE(holder != nullptr);
  CHECK(cuda_double::exec_difference(cuda_double::exec_nodes(holder->raw_exec()),
                                     instantiated(holder->raw_graph()))
            .empty());
  stream.synchronize();
  std::vector<int> seen(per_key, 0);
  CUDA_REQUIRE(cudaMemcpy(seen.data(), pooled, per_key * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(seen == std::vector<int>(per_key, 2));
  CUDA_REQUIRE(cudaFree(pooled));
}

#endif
