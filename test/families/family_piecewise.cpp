// Runtime tests: families of piecewise graphs (#45 item 5, #47 item 4). In one-executable mode
// segment k of every key shares the executable of its topology with the other keys' segment k,
// switched as a plain family's key is (set-params on the nodes that differ); a key whose segment
// has another topology gets that segment's own executable, and the report names the segment.
// replay_at_least(n, stream, ctx) hands the islands a context; a family of piecewise graphs of
// pool::sleepable segments sleeps and wakes through sleepable_pool_handle(family.pool()). Both
// backends; kernels from family_kernels.cu, host models on the double.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/sleepable_pool.hpp>

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

/// What the islands read at every replay: a host value that changes between steps.
struct step_values {
  int value = 0;   // what island 0 writes into `marks`
  int islands = 0; // islands run, written back by them
};

using step = gc::piecewise_graph<gc::shared_pool_graph>;
using context_step = gc::piecewise_graph<gc::shared_pool_graph, step_values>;
using sleepy_segment = gc::graph_with<gc::pool::sleepable>;
using sleepy_step = gc::piecewise_graph<sleepy_segment>;
using shared_sleepy_step = gc::piecewise_graph<gc::graph_with<gc::pool::sleepable_shared>>;

/// The buffers a step writes, and its stream.
struct piecewise_fixture {
  piecewise_fixture() { gctest::model_family_kernels(); }
  gctest::stream stream;
  gctest::device_buffer<int> out{4 * per_key};
  gctest::device_buffer<int> copy{4 * per_key};
  gctest::device_buffer<int> marks{per_key};

  /// Segment 0: a memset and a fill of the key's width (value: the key); island 0; segment 1: a
  /// copy of the key's width. Keys at least `extra_from` add a fill of `marks` to segment 1 (a
  /// topology of its own there).
  template <class Scope>
  void step_work(std::size_t key, Scope& cap, std::size_t extra_from = 99) {
    const int count = static_cast<int>(key) * per_key;
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(int);
    CUDA_REQUIRE(cudaMemsetAsync(out.get(), 0, bytes, cap.stream()));
    gctest::launch_fill(cap.stream(), out.get(), count, static_cast<int>(key));
    cap.eager([this](cudaStream_t s) { gctest::launch_fill(s, marks.get(), per_key, 5); });
    CUDA_REQUIRE(
        cudaMemcpyAsync(copy.get(), out.get(), bytes, cudaMemcpyDeviceToDevice, cap.stream()));
    if (key >= extra_from) {
      gctest::launch_fill(cap.stream(), marks.get(), per_key, 7);
    }
  }

  std::vector<int> read(const int* device, std::size_t count) {
    std::vector<int> host(count, 0);
    CUDA_REQUIRE(
        cudaMemcpyAsync(host.data(), device, count * sizeof(int), cudaMemcpyDeviceToHost, stream));
    stream.synchronize();
    return host;
  }

  /// Replays the bucket of `n` (`replay`: the family's replay_at_least) and checks that the
  /// copy holds `n`'s values and nothing beyond its width.
  template <class Replay>
  void replay_checked(std::size_t n, Replay&& replay) {
    CUDA_REQUIRE(cudaMemsetAsync(copy.get(), 0xff, 4 * per_key * sizeof(int), stream));
    REQUIRE(replay(n) == n);
    const std::vector<int> seen = read(copy.get(), 4 * per_key);
    const std::size_t count = n * per_key;
    CHECK(std::vector<int>(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(count)) ==
          std::vector<int>(count, static_cast<int>(n)));
    CHECK(std::vector<int>(seen.begin() + static_cast<std::ptrdiff_t>(count), seen.end()) ==
          std::vector<int>(seen.size() - count, -1));
  }
};

} // namespace

TEST_CASE_METHOD(piecewise_fixture,
                 "a one-executable family of piecewise graphs shares each segment's executable "
                 "across keys, and every replay runs its key") {
  gc::graph_family<std::size_t, step> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 2, 3, 4}, stream,
                           [&](std::size_t key, step::scope& cap) { step_work(key, cap); })
              .complete());
  CHECK(family.executables() == 2); // segment 0's and segment 1's, for the four keys
  for (const std::size_t n : {4, 1, 3, 2, 2, 4, 1, 1, 3, 4}) {
    INFO("key " << n);
    replay_checked(n, [&](std::size_t k) { return family.replay_at_least(k, stream); });
  }
  std::size_t patches = 0;
  for (const std::size_t key : family.keys()) {
    patches += family.statistics(key)->patches;
    CHECK(family.statistics(key)->fallbacks == 0);
    CHECK(family.statistics(key)->own_executable.empty());
  }
  CHECK(patches == 8); // every switch at a replay (4 1 3 2 4 1 3 4): both segments patched
  CHECK(family.executables() == 2);
  CHECK(read(marks.get(), per_key) == std::vector<int>(per_key, 5)); // the island ran
  CHECK(family.find(4) != nullptr); // the key replayed last holds its executables
  CHECK(family.find(3) == nullptr); // the others hold templates
}

TEST_CASE_METHOD(piecewise_fixture,
                 "a piecewise key whose segment has another topology gets that segment's own "
                 "executable, and shares the others") {
  gc::graph_family<std::size_t, step> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 2, 3, 4}, stream,
                           [&](std::size_t key, step::scope& cap) { step_work(key, cap, 4); })
              .complete());
  CHECK(family.executables() == 3); // segment 0 shared by all; segment 1: keys 1-3, and key 4
  for (const std::size_t n : {4, 1, 4, 2, 3, 4}) {
    INFO("key " << n);
    replay_checked(n, [&](std::size_t k) { return family.replay_at_least(k, stream); });
  }
  CHECK(read(marks.get(), per_key) == std::vector<int>(per_key, 7)); // key 4's segment 1 ran last
  CHECK(family.statistics(4)->fallbacks == 0);
  CHECK(family.executables() == 3);
}

TEST_CASE_METHOD(piecewise_fixture,
                 "a family of piecewise graphs hands replay_at_least's context to every island") {
  gc::graph_family<std::size_t, context_step> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t key, context_step::scope& cap) {
                             const int count = static_cast<int>(key) * per_key;
                             gctest::launch_fill(cap.stream(), out.get(), count,
                                                 static_cast<int>(key));
                             cap.eager([this](cudaStream_t s, step_values& now) {
                               gctest::launch_fill(s, marks.get(), per_key, now.value);
                               ++now.islands;
                             });
                             CUDA_REQUIRE(cudaMemcpyAsync(copy.get(), out.get(),
                                                          static_cast<std::size_t>(count) * 4,
                                                          cudaMemcpyDeviceToDevice, cap.stream()));
                           })
              .complete());
  step_values now{11, 0};
  REQUIRE(family.replay_at_least(2, stream, now) == 2);
  CHECK(now.islands == 1);
  CHECK(read(marks.get(), per_key) == std::vector<int>(per_key, 11));
  now.value = 12;
  REQUIRE(family.replay_at_least(1, stream, now) == 1);
  CHECK(now.islands == 2);
  CHECK(read(marks.get(), per_key) == std::vector<int>(per_key, 12));
  CHECK(read(copy.get(), per_key) == std::vector<int>(per_key, 1));
  CHECK(family.executables() == 2);
}

TEST_CASE_METHOD(piecewise_fixture,
                 "verify_first_switch over piecewise keys is an error saying what to do: their "
                 "work takes the scope, so the family cannot run it eagerly") {
  std::size_t runs = 0;
  gc::graph_family<std::size_t, step> family{
      {.one_executable = true, .verify_first_switch = true, .verify_outputs = [&](std::size_t key) {
         return std::vector<gc::family_output>{{copy.get(), key * per_key * sizeof(int), "copy"}};
       }}};
  // A piecewise step's work takes the scope (its islands), and verify runs the work eagerly on a
  // stream: the first switch says so, as for a plain family whose work takes the scope.
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t key, step::scope& cap) {
                             ++runs;
                             step_work(key, cap);
                           })
              .complete());
  CHECK_THROWS_WITH(family.replay_at_least(2, stream),
                    gctest::contains("give capture_all() a work taking (key, cudaStream_t)"));
  CHECK(runs == 2);
}

TEST_CASE_METHOD(piecewise_fixture,
                 "a family of piecewise graphs of sleepable segments sleeps with its executables "
                 "released, wakes and replays what it replayed before") {
  gc::graph_family<std::size_t, sleepy_step> family;
  REQUIRE(family
              .capture_all({1, 2, 3}, stream,
                           [&](std::size_t key, sleepy_step::scope& cap) {
                             int* scratch = cap.template allocate<int>(per_key * key);
                             const int count = static_cast<int>(key) * per_key;
                             gctest::launch_fill(cap.stream(), scratch, count,
                                                 static_cast<int>(key));
                             cap.eager([](cudaStream_t /*s*/) {});
                             CUDA_REQUIRE(cudaMemcpyAsync(copy.get(), scratch,
                                                          static_cast<std::size_t>(count) * 4,
                                                          cudaMemcpyDeviceToDevice, cap.stream()));
                           })
              .complete());
  gc::sleepable_pool_handle pool{family.pool()}; // the family's pool is a sleepable one
  REQUIRE(pool.statistics().reserved_bytes > 0);
  CHECK(family.executables() == 6); // one per segment of each key (it said 3 before session 19)
  replay_checked(3, [&](std::size_t k) { return family.replay_at_least(k, stream); });
  stream.synchronize();
  pool.sleep();
  family.release_executables(); // every key's segments keep their templates only
  CHECK(pool.asleep());
  CHECK(family.find(3)->segment(0).state() == gc::graph_state::captured);
  CHECK(family.find(3)->segment(1).state() == gc::graph_state::captured);
  pool.wake();
  for (const std::size_t n : {1, 3, 2}) { // each key's segments instantiated at its replay
    INFO("key " << n);
    replay_checked(n, [&](std::size_t k) { return family.replay_at_least(k, stream); });
    CHECK(family.find(n)->segment(1).state() == gc::graph_state::instantiated);
  }
  family.release_executables();
  family.restore_executables(); // or all at once
  CHECK(family.find(1)->segment(0).state() == gc::graph_state::instantiated);
  replay_checked(1, [&](std::size_t k) { return family.replay_at_least(k, stream); });
}

namespace {

/// A family of piecewise graphs of `Step` over keys 1..4, each key's capture allocating a block of
/// its width in segment 0, freeing it after the island (a bridge); returns the pool's reserve.
template <class Step>
std::size_t bridged_family_reserve(piecewise_fixture& f, std::size_t& largest_alone) {
  const auto work = [&](std::size_t key, typename Step::scope& cap) {
    const std::size_t count = (std::size_t{1} << 20) * key; // 4 MiB a key: several slabs
    int* bridge = cap.template allocate<int>(count);
    gctest::launch_fill(cap.stream(), bridge, static_cast<int>(count), static_cast<int>(key));
    cap.eager([](cudaStream_t /*s*/) {});
    CUDA_REQUIRE(cudaMemcpyAsync(f.copy.get(), bridge, per_key * sizeof(int),
                                 cudaMemcpyDeviceToDevice, cap.stream()));
    cap.deallocate(bridge);
  };
  gc::graph_family<std::size_t, Step> alone;
  REQUIRE(alone.capture_all({4}, f.stream, work).complete());
  largest_alone = alone.pool().statistics().reserved_bytes;
  gc::graph_family<std::size_t, Step> family;
  REQUIRE(family.capture_all({1, 2, 3, 4}, f.stream, work).complete());
  for (const std::size_t n : {1, 4, 2, 3}) {
    REQUIRE(family.replay_at_least(n, f.stream) == n);
    CHECK(f.read(f.copy.get(), per_key) == std::vector<int>(per_key, static_cast<int>(n)));
  }
  return family.pool().statistics().reserved_bytes;
}

} // namespace

TEST_CASE_METHOD(piecewise_fixture,
                 "pool::sleepable_shared: a family's keys reuse what the larger keys freed, and "
                 "the pool sleeps") {
  std::size_t alone = 0;
  const std::size_t shared = bridged_family_reserve<shared_sleepy_step>(*this, alone);
  INFO("the largest key alone reserves " << alone << " bytes, the family " << shared);
  CHECK(shared <= alone + alone / 5); // <= 1.2x the largest key alone
  std::size_t own_alone = 0;
  const std::size_t own = bridged_family_reserve<sleepy_step>(*this, own_alone);
  INFO("pool::sleepable: the largest alone " << own_alone << ", the family " << own);
  CHECK(own > shared); // each key keeps the blocks its capture freed

  gc::graph_family<std::size_t, shared_sleepy_step> family;
  REQUIRE(family
              .capture_all(
                  {1, 2}, stream,
                  [&](std::size_t key, shared_sleepy_step::scope& cap) { step_work(key, cap); })
              .complete());
  gc::sleepable_pool_handle pool{family.pool()};
  replay_checked(2, [&](std::size_t k) { return family.replay_at_least(k, stream); });
  pool.sleep();
  CHECK_THROWS_AS(family.replay_at_least(1, stream), gc::state_error); // nothing launched asleep
  pool.wake();
  replay_checked(1, [&](std::size_t k) { return family.replay_at_least(k, stream); });
}
