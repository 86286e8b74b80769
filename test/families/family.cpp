// Runtime tests: shape families (graphcap/family.hpp). CUDA work the host can execute (memsets,
// copies), so that they run on the test double and the GPU.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/liveness.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace gc = graphcap;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t bytes = 4096;
constexpr std::size_t mib = std::size_t{1} << 20;

std::vector<unsigned char> filled(std::size_t value) {
  return std::vector<unsigned char>(bytes, static_cast<unsigned char>(value));
}

/// A stream, a device buffer, its host copy, and the keys each capture saw.
struct family_fixture {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> device{bytes};
  std::vector<unsigned char> host = std::vector<unsigned char>(bytes, 0);
  std::vector<std::size_t> captured; // keys in capture order (work runs only while capturing)

  /// Fills `host` with the key: two nodes.
  auto fill() {
    return [this](std::size_t key, cudaStream_t s) {
      captured.push_back(key);
      gctest::fill_and_copy(s, device, host, static_cast<int>(key));
    };
  }

  /// Replays the bucket of `n` and checks that the replay ran that key's graph.
  template <class Family>
  std::size_t replay_checked(Family& family, std::size_t n) {
    const std::size_t key = family.replay_at_least(n, stream);
    stream.synchronize();
    CHECK(host == filled(key));
    return key;
  }
};

/// A clock the test moves: capture_all() reads it, the work advances it.
struct manual_clock {
  std::shared_ptr<gc::family_clock::time_point> now =
      std::make_shared<gc::family_clock::time_point>();
  std::function<gc::family_clock::time_point()> function() const {
    return [now = now] { return *now; };
  }
  void advance(gc::family_clock::duration by) const { *now += by; }
};

} // namespace

TEST_CASE_METHOD(family_fixture, "graph_family captures largest first, on one stream, one pool") {
  gc::graph_family<> family;
  const auto result = family.capture_all({4, 1, 16, 2, 8}, stream, fill());
  CHECK(captured == std::vector<std::size_t>{16, 8, 4, 2, 1});
  CHECK(result.captured == std::vector<std::size_t>{16, 8, 4, 2, 1});
  CHECK(result.complete());
  CHECK(result.stopped_by == gc::family_stop::none);
  CHECK(family.keys() == std::vector<std::size_t>{1, 2, 4, 8, 16});
  CHECK(family.capture_stream() != nullptr);
  CHECK_FALSE(gctest::capturing(family.capture_stream()));
  for (const std::size_t key : family.keys()) {
    REQUIRE(family.find(key) != nullptr);
    CHECK(family.find(key)->node_count() == 2);
  }
  CHECK(family.find(3) == nullptr);
}

TEST_CASE_METHOD(family_fixture, "graph_family: the bucket of a request at its boundaries") {
  gc::graph_family<> family;
  REQUIRE(family.capture_all({2, 4, 8, 16}, stream, fill()).complete());
  CHECK(family.find_at_least(0) == 2u); // below the smallest
  CHECK(family.find_at_least(1) == 2u);
  CHECK(family.find_at_least(2) == 2u); // exact
  CHECK(family.find_at_least(3) == 4u); // key + 1
  CHECK(family.find_at_least(7) == 8u); // key - 1
  CHECK(family.find_at_least(8) == 8u);
  CHECK(family.find_at_least(9) == 16u);  // between keys
  CHECK(family.find_at_least(16) == 16u); // the largest
  CHECK_FALSE(family.find_at_least(17).has_value());
  for (const std::size_t n : {0, 1, 2, 3, 5, 8, 9, 15, 16}) {
    INFO("request " << n);
    const std::size_t key = replay_checked(family, n);
    CHECK(key >= n);
    CHECK(key == *family.find_at_least(n));
  }
}

TEST_CASE_METHOD(family_fixture, "graph_family above the largest key: an error, or a capture") {
  SECTION("no capture on demand: family_key_error naming the request and the largest key") {
    gc::graph_family<> family;
    REQUIRE(family.capture_all({2, 4}, stream, fill()).complete());
    CHECK_THROWS_AS(family.replay_at_least(17, stream), gc::family_key_error);
    CHECK_THROWS_WITH(family.replay_at_least(17, stream),
                      gctest::contains("at least 17 (the largest is 4)"));
    CHECK(family.size() == 2);
  }
  SECTION("capture on demand: the request itself becomes a key") {
    gc::graph_family<> family{{.capture_on_demand = true}};
    REQUIRE(family.capture_all({2, 4}, stream, fill()).complete());
    CHECK(replay_checked(family, 40) == 40);
    CHECK(family.keys() == std::vector<std::size_t>{2, 4, 40});
    CHECK(replay_checked(family, 30) == 40);
    CHECK(family.statistics(40)->replays == 2);
    CHECK(captured == std::vector<std::size_t>{4, 2, 40});
  }
  SECTION("an empty family says it has no key") {
    gc::graph_family<> family;
    CHECK_THROWS_AS(family.replay_at_least(1, stream), gc::family_key_error);
    CHECK_THROWS_WITH(family.replay_at_least(1, stream), gctest::contains("it has no key"));
  }
}

TEST_CASE_METHOD(family_fixture, "graph_family rejects bad key sets, naming the key") {
  gc::graph_family<> family;
  CHECK_THROWS_AS(family.capture_all({}, stream, fill()), gc::family_key_error);
  CHECK_THROWS_WITH(family.capture_all({}, stream, fill()), gctest::contains("was given no key"));
  CHECK_THROWS_AS(family.capture_all({1, 2, 2, 3}, stream, fill()), gc::family_key_error);
  CHECK_THROWS_WITH(family.capture_all({1, 2, 2, 3}, stream, fill()),
                    gctest::contains("the key 2 twice"));
  CHECK(captured.empty());
  CHECK(family.size() == 0);
  REQUIRE(family.capture_all({1}, stream, fill()).complete());
  CHECK_THROWS_AS(family.capture_all({2}, stream, fill()), gc::state_error);
  family.clear();
  REQUIRE(family.capture_all({2}, stream, fill()).complete());
  CHECK(family.keys() == std::vector<std::size_t>{2});
}

TEST_CASE_METHOD(family_fixture, "graph_family stops at its time budget and says which keys") {
  SECTION("a budget of zero captures nothing") {
    gc::graph_family<> family{{.time_budget = 0ns}};
    const auto result = family.capture_all({1, 2, 3}, stream, fill());
    CHECK(result.stopped_by == gc::family_stop::time_budget);
    CHECK(result.not_captured == std::vector<std::size_t>{3, 2, 1});
    CHECK(result.captured.empty());
    CHECK(family.size() == 0);
  }
  SECTION("a budget reached after some keys: those keys work") {
    const manual_clock clock;
    gc::graph_family<> family{{.time_budget = 25ms, .clock = clock.function()}};
    const auto result =
        family.capture_all({1, 2, 3, 4, 5}, stream, [&](std::size_t key, cudaStream_t s) {
          clock.advance(10ms); // each capture takes 10 ms
          fill()(key, s);
        });
    CHECK(result.captured == std::vector<std::size_t>{5, 4, 3});
    CHECK(result.not_captured == std::vector<std::size_t>{2, 1});
    CHECK(result.stopped_by == gc::family_stop::time_budget);
    CHECK(result.elapsed == 30ms);
    CHECK(family.statistics(4)->capture_time == 10ms);
    CHECK(replay_checked(family, 1) == 3);
  }
}

TEST_CASE("graph_family stops at its memory budget and says which keys") {
  gctest::stream stream;
  gc::graph_family<> family{{.memory_budget = 12 * mib}};
  // Every key keeps 2 MiB per unit of key: the pool grows by that much per capture.
  const auto result = family.capture_all(
      {1, 2, 3, 4}, stream, [](std::size_t key, gc::shared_pool_graph::scope& cap) {
        auto* kept = cap.allocate<unsigned char>(2 * mib * key);
        CUDA_REQUIRE(cudaMemsetAsync(kept, 0, 2 * mib * key, cap.stream()));
      });
  CHECK(result.captured == std::vector<std::size_t>{4, 3});
  CHECK(result.not_captured == std::vector<std::size_t>{2, 1});
  CHECK(result.stopped_by == gc::family_stop::memory_budget);
  CHECK(family.pool().statistics().reserved_bytes >= 12 * mib);
  CHECK(family.statistics(4)->pool_bytes >= 8 * mib);
  CHECK(family.statistics(3)->pool_bytes >= 6 * mib);
}

TEST_CASE("graph_family: smaller keys reuse the temporaries the largest key freed") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  std::map<std::size_t, std::set<void*>> blocks; // the temporaries' addresses, per key
  auto step = [&](std::size_t key, gc::shared_pool_graph::scope& cap) {
    for (int layer = 0; layer < 4; ++layer) { // a temporary per layer, freed after use
      auto* temporary = cap.allocate<unsigned char>(bytes * key);
      blocks[key].insert(temporary);
      CUDA_REQUIRE(cudaMemsetAsync(temporary, static_cast<int>(key), bytes * key, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(host.data(), temporary, bytes, cudaMemcpyDeviceToHost, cap.stream()));
      cap.deallocate(temporary);
    }
  };
  const std::vector<std::size_t> keys{1, 2, 4, 8, 16, 32};
  SECTION("reusing larger blocks: a key runs in a block a larger key freed, at most twice its "
          "size, or where the pool has room") {
    gc::graph_family<> family;
    REQUIRE(family.capture_all(keys, stream, step).complete());
    for (const std::size_t key : keys) {
      CHECK(blocks[key].size() == 1);
    }
    // 16 in 32's block, 4 in 8's, 1 in 2's: a block over twice the request is taken only where
    // carving would grow the pool (pool/detail/free_blocks.hpp, fits_larger).
    CHECK(blocks[16] == blocks[32]);
    CHECK(blocks[4] == blocks[8]);
    CHECK(blocks[1] == blocks[2]);
    CHECK(blocks[8] != blocks[32]);
    CHECK(family.pool().statistics().slabs == 1); // and no growth: one slab for every key
    for (const std::size_t key : family.keys()) {
      family.replay_at_least(key, stream);
      stream.synchronize();
      CHECK(host == filled(key));
    }
  }
  SECTION("exact size classes: one block per key") {
    gc::graph_family<> family{{.reuse_larger_blocks = false}};
    REQUIRE(family.capture_all(keys, stream, step).complete());
    std::set<void*> distinct;
    for (const std::size_t key : keys) {
      distinct.insert(blocks[key].begin(), blocks[key].end());
    }
    CHECK(distinct.size() == keys.size());
  }
}

TEST_CASE("graph_family: eviction while buffer outputs are held") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  std::map<std::size_t, gc::buffer<unsigned char>> outputs;
  gc::graph_family<> family{{.capture_on_demand = true}};
  REQUIRE(family
              .capture_all({2, 4, 8}, stream,
                           [&](std::size_t key, gc::shared_pool_graph::scope& cap) {
                             gc::buffer<unsigned char> output =
                                 cap.make_buffer<unsigned char>(bytes);
                             CUDA_REQUIRE(cudaMemsetAsync(output.data(), static_cast<int>(key),
                                                          bytes, cap.stream()));
                             outputs[key] = output;
                           })
              .complete());
  for (const std::size_t key : family.keys()) {
    family.replay_at_least(key, stream);
  }
  stream.synchronize();
  CHECK(family.evict(4));
  CHECK_FALSE(family.evict(4));
  CHECK(family.find_at_least(3) == 8u); // requests for 4 go to 8 now
  CHECK(family.statistics(4) == nullptr);
  // The evicted graph's output is still valid, with what its last replay wrote, and no later
  // capture takes its block.
  CUDA_REQUIRE(cudaMemcpy(host.data(), outputs.at(4).data(), bytes, cudaMemcpyDeviceToHost));
  CHECK(host == filled(4));
  CHECK(family.replay_at_least(16, stream) == 16);
  stream.synchronize();
  CHECK(outputs.at(16).data() != outputs.at(4).data());
  CUDA_REQUIRE(cudaMemcpy(host.data(), outputs.at(4).data(), bytes, cudaMemcpyDeviceToHost));
  CHECK(host == filled(4));
  family.clear(); // every graph gone: the buffers still hold their blocks
  CUDA_REQUIRE(cudaMemcpy(host.data(), outputs.at(16).data(), bytes, cudaMemcpyDeviceToHost));
  CHECK(host == filled(16));
}

TEST_CASE_METHOD(family_fixture, "graph_family: a failing capture leaves the other keys usable") {
  gc::graph_family<> family;
  const auto result =
      family.capture_all({1, 2, 4, 8}, stream, [&](std::size_t key, cudaStream_t s) {
        fill()(key, s);
        if (key == 4) {
          throw std::runtime_error("no kernel for 4");
        }
      });
  CHECK(result.captured == std::vector<std::size_t>{8, 2, 1});
  REQUIRE(result.failures.size() == 1);
  CHECK(result.failures.front().key == 4);
  CHECK(result.failures.front().message == "no kernel for 4");
  CHECK_FALSE(result.complete());
  CHECK_THROWS_AS(result.rethrow_first_failure(), std::runtime_error);
  CHECK_FALSE(gctest::capturing(family.capture_stream()));
  gctest::require_no_last_error();
  CHECK(family.keys() == std::vector<std::size_t>{1, 2, 8});
  CHECK(replay_checked(family, 3) == 8);
  CHECK(replay_checked(family, 2) == 2);
}

TEST_CASE_METHOD(family_fixture, "graph_family: a lookup after failed captures names the cause") {
  gc::graph_family<> family;
  const auto result = family.capture_all({1, 2, 4}, stream, [](std::size_t key, cudaStream_t) {
    throw std::runtime_error("no kernel for " + std::to_string(key));
  });
  CHECK(result.failures.size() == 3);
  CHECK_FALSE(result.complete());
  // Not "(it has no key)" alone: the keys' own failure, which the result held.
  CHECK_THROWS_AS(family.replay_at_least(1, stream), gc::family_key_error);
  CHECK_THROWS_WITH(family.replay_at_least(1, stream),
                    gctest::contains("capture_all() failed for 3 of 3 key(s), the first (4) "
                                     "with: no kernel for 4"));
  family.clear(); // forgets the failures with the keys
  CHECK_THROWS_WITH(family.replay_at_least(1, stream),
                    gctest::contains("(it has no key): capture a larger key"));
}

TEST_CASE_METHOD(family_fixture, "graph_family: statistics, progress and the report") {
  std::vector<gc::family_progress> steps;
  std::vector<std::size_t> step_keys;
  gc::graph_family<> family{{.on_progress = [&](std::size_t key, const gc::family_progress& at) {
    step_keys.push_back(key);
    steps.push_back(at);
  }}};
  REQUIRE(family.capture_all({1, 2, 3}, stream, fill()).complete());
  REQUIRE(steps.size() == 3);
  CHECK(step_keys == std::vector<std::size_t>{3, 2, 1});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CHECK(steps[i].index == i + 1);
    CHECK(steps[i].count == 3);
    CHECK(steps[i].nodes == 2);
    CHECK_FALSE(steps[i].failed);
  }
  for (const std::size_t n : {1, 2, 2, 3, 3, 3}) {
    replay_checked(family, n);
  }
  CHECK(family.statistics(1)->replays == 1);
  CHECK(family.statistics(2)->replays == 2);
  CHECK(family.statistics(3)->replays == 3);
  CHECK(family.statistics(3)->nodes == 2);
  const std::string report = family.report();
  CHECK_THAT(report, gctest::contains("3 keys, one graph per key"));
  CHECK_THAT(report, gctest::contains("replays"));
  // Two header lines and three keys, then the ledger's (#46): two header lines and three keys.
  CHECK(std::count(report.begin(), report.end(), '\n') == 10);
  CHECK_THAT(report, gctest::contains("\nledger: "));
}

TEST_CASE_METHOD(family_fixture, "graph_family warm-up: once overall, or once per key") {
  int eager = 0;
  auto counting = [&](std::size_t key, cudaStream_t s) {
    if (!gctest::capturing(s)) {
      ++eager;
    }
    fill()(key, s);
  };
  SECTION("once: the largest key only") {
    gc::graph_family<> family{{.warmup_runs = 2}};
    REQUIRE(family.capture_all({1, 2, 3}, stream, counting).complete());
    CHECK(eager == 2);
  }
  SECTION("per key") {
    gc::graph_family<> family{{.warmup_runs = 2, .warmup = gc::family_warmup::per_key}};
    REQUIRE(family.capture_all({1, 2, 3}, stream, counting).complete());
    CHECK(eager == 6);
  }
  SECTION("a work taking the scope cannot warm up") {
    gc::graph_family<> family{{.warmup_runs = 1}};
    CHECK_THROWS_AS(
        family.capture_all({1}, stream, [](std::size_t, gc::shared_pool_graph::scope&) {}),
        gc::error);
  }
  stream.synchronize();
}

TEST_CASE_METHOD(family_fixture, "graph_family one-executable mode switches by update in place") {
  gc::graph_family<> family{{.one_executable = true}};
  const auto result = family.capture_all({1, 2, 4}, stream, fill());
  CHECK(result.complete());
  CHECK(captured == std::vector<std::size_t>{4, 2, 1});
  REQUIRE(family.current_key() == 1u); // the last captured took the executable
  CHECK(family.executables() == 1);    // one topology: one executable graph
  const gc::shared_pool_graph* const holder = family.find(1);
  REQUIRE(holder != nullptr);
  const cudaGraphExec_t executable = holder->raw_exec();
  CHECK(family.find(4) == nullptr); // its template only, until it takes the executable back
  CHECK(family.statistics(4)->switches == 0);  // the first of its topology founds its group:
  CHECK(family.statistics(4)->fallbacks == 0); // its instantiation is no switch, no fallback
  CHECK(family.statistics(2)->updates == 1);   // the others join by an update
  CHECK(family.statistics(1)->updates == 1);

  CHECK(replay_checked(family, 3) == 4); // switches to 4
  CHECK(family.last_update().updated());
  CHECK(family.current_key() == 4u);
  REQUIRE(family.find(4) != nullptr);
  CHECK(family.find(4)->raw_exec() == executable); // the same executable graph, updated in place
  CHECK(family.find(1) == nullptr);
  CHECK(replay_checked(family, 4) == 4); // no switch
  CHECK(family.statistics(4)->switches == 1);
  CHECK(family.statistics(4)->updates == 1);
  CHECK(family.statistics(4)->replays == 2);
  CHECK(replay_checked(family, 2) == 2);
  CHECK(replay_checked(family, 1) == 1);
  CHECK(captured == std::vector<std::size_t>{4, 2, 1}); // no recapture: switches are updates
  CHECK(family.executables() == 1);
  CHECK_THAT(family.report(), gctest::contains("one executable graph per topology"));
  CHECK_THAT(family.report(), gctest::contains("1 executable graphs"));
}

TEST_CASE_METHOD(family_fixture, "graph_family one-executable mode: one executable per topology") {
  int extra = 0;
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(
      family
          .capture_all({1, 2, 3, 4}, stream,
                       [&](std::size_t key, cudaStream_t s) {
                         fill()(key, s);
                         if (key % 2 == 0) { // one node more: another topology
                           CUDA_REQUIRE(cudaLaunchHostFunc(
                               s, [](void* counter) { ++*static_cast<int*>(counter); }, &extra));
                         }
                       })
          .complete());
  CHECK(family.executables() == 2);
  CHECK(family.statistics(4)->fallbacks == 0); // the first of each topology founds its group
  CHECK(family.statistics(3)->fallbacks == 0);
  CHECK(family.statistics(2)->updates == 1); // and the second joins it
  CHECK(family.statistics(1)->updates == 1);
  CHECK(family.find(1) != nullptr); // each group's last captured holds its executable
  CHECK(family.find(2) != nullptr);
  CHECK(family.find(2)->raw_exec() != family.find(1)->raw_exec());
  for (const std::size_t n : {2, 1, 4, 3, 4, 2}) {
    CHECK(replay_checked(family, n) == n);
  }
  CHECK(extra == 4); // 2, 4, 4, 2: the node of the other topology ran where it belongs
  CHECK(family.executables() == 2);
  CHECK(family.statistics(4)->switches == 1); // switched to once (4 then 4 again)
  CHECK(family.statistics(4)->fallbacks == 0);
  CHECK(family.statistics(3)->updates == 1); // 1 held it; 3 took it back by an update

  CHECK(family.find(2) != nullptr);
  CHECK(family.evict(2)); // 2 holds its group's executable: it goes with it
  CHECK(family.executables() == 1);
  CHECK(replay_checked(family, 4) == 4); // the group held none: 4 instantiates its own
  CHECK(family.last_update().outcome == gc::update_outcome::instantiated);
  CHECK(family.statistics(4)->fallbacks == 1); // an instantiation in place of an update
  CHECK(family.executables() == 2);
  CHECK(extra == 5);
}

TEST_CASE("graph_family checks liveness on every replay") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  using checked = gc::graph_with<gc::mode::thread_local_, gc::pool::shared, gc::liveness::check>;
  auto input = std::make_unique<gctest::device_buffer<unsigned char>>(bytes);
  CUDA_REQUIRE(cudaMemset(input->get(), 7, bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize());
  gc::graph_family<std::size_t, checked> family;
  REQUIRE(family
              .capture_all({1, 2}, stream,
                           [&](std::size_t, cudaStream_t s) {
                             CUDA_REQUIRE(cudaMemcpyAsync(host.data(), input->get(), bytes,
                                                          cudaMemcpyDeviceToHost, s));
                           })
              .complete());
  family.replay_at_least(1, stream);
  stream.synchronize();
  CHECK(host == filled(7));
  input.reset();
  CHECK_THROWS_AS(family.replay_at_least(2, stream), gc::liveness_error);
  CHECK(family.statistics(2)->replays == 0);
}

TEMPLATE_TEST_CASE("graph_family of other graph configurations", "",
                   (gc::graph_with<gc::pool::shared>), gc::graph,
                   (gc::graph_with<gc::mode::relaxed, gc::pool::shared>)) {
  family_fixture fixture;
  gc::graph_family<std::size_t, TestType> family;
  const auto result = family.capture_all({1, 4}, fixture.stream, fixture.fill());
  CHECK(result.complete());
  CHECK(fixture.replay_checked(family, 2) == 4);
  CHECK(fixture.replay_checked(family, 1) == 1);
  CHECK(family.find(4)->node_count() == 2);
}

TEST_CASE("graph_family one-executable mode: switching up and down allocates nothing") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  gc::graph_family<> family{{.one_executable = true}};
  REQUIRE(family
              .capture_all({1, 8, 64}, stream,
                           [&](std::size_t key, gc::shared_pool_graph::scope& cap) {
                             // 64 KiB per unit of key: key 64's temporary is a slab of its own (4
                             // MiB).
                             const std::size_t size = 16 * bytes * key;
                             auto* temporary = cap.allocate<unsigned char>(size);
                             CUDA_REQUIRE(cudaMemsetAsync(temporary, static_cast<int>(key), size,
                                                          cap.stream()));
                             CUDA_REQUIRE(cudaMemcpyAsync(host.data(), temporary, bytes,
                                                          cudaMemcpyDeviceToHost, cap.stream()));
                           })
              .complete());
  const std::size_t reserved = family.pool().statistics().reserved_bytes;
  for (int round = 0; round < 20; ++round) {
    for (const std::size_t n : {64, 1, 8, 64, 8, 1}) {
      REQUIRE(family.replay_at_least(n, stream) == n);
      stream.synchronize();
      REQUIRE(host == filled(n));
    }
  }
  // Each key's graph keeps its template and the block it holds; a switch is an update of the
  // executable, no capture: the pool neither grows nor hands blocks around.
  CHECK(reserved >= 4 * mib);
  CHECK(family.pool().statistics().reserved_bytes == reserved);
  CHECK(family.pool().statistics().blocks_in_use == 3);
  CHECK(family.executables() == 1);
  CHECK(family.statistics(64)->switches == 40);
  CHECK(family.statistics(64)->updates == 40);
  CHECK(family.statistics(64)->fallbacks == 0); // it founded its group: no fallback
}
