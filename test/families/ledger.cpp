// A family's ledger, byte budget and released executables (#46) on both backends: on the GPU the
// executables' bytes are what the driver took (the double of ledger.double.cpp models it; here
// the double's executables take none, as by default). The figures add up to cudaMemGetInfo's
// drop around capture_all() (within the driver's 2 MiB piece on the GPU; the pool's device bytes
// include the stream-ordered allocator's reserve beyond its slabs), a budget is never
// exceeded and no key fits a tiny one, and released executables come back to correct replays.
#include <graphcap/family.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;
constexpr std::size_t piece = std::size_t{2} << 20; // the driver's piece of executable memory

std::size_t free_now() {
  std::size_t free = 0;
  std::size_t total = 0;
  CUDA_REQUIRE(cudaDeviceSynchronize());
  CUDA_REQUIRE(cudaMemGetInfo(&free, &total));
  return free;
}

std::size_t distance(std::size_t a, std::size_t b) {
  return a > b ? a - b : b - a;
}

/// Key k: a pool temporary of k * 4 KiB set to k, copied to the host 20 * k times.
struct ledger_fixture {
  gctest::stream stream;
  std::vector<unsigned char> host = std::vector<unsigned char>(bytes, 0);

  auto work() {
    return [this](std::size_t key, gc::shared_pool_graph::scope& cap) {
      auto* temporary = cap.allocate<unsigned char>(bytes * key);
      CUDA_REQUIRE(cudaMemsetAsync(temporary, static_cast<int>(key), bytes * key, cap.stream()));
      for (std::size_t i = 0; i < 20 * key; ++i) {
        CUDA_REQUIRE(
            cudaMemcpyAsync(host.data(), temporary, bytes, cudaMemcpyDeviceToHost, cap.stream()));
      }
      cap.deallocate(temporary);
    };
  }
  void check_replay(gc::graph_family<>& family, std::size_t n, std::size_t expected) {
    CHECK(family.replay_at_least(n, stream) == expected);
    stream.synchronize();
    CHECK(host == std::vector<unsigned char>(bytes, static_cast<unsigned char>(expected)));
  }
};

} // namespace

TEST_CASE_METHOD(ledger_fixture, "family ledger adds up, and matches cudaMemGetInfo's drop") {
  const std::size_t before = free_now();
  gc::graph_family<> family;
  REQUIRE(family.capture_all({1, 2, 4, 8}, stream, work()).complete());
  const std::size_t drop = before - free_now();
  const auto ledger = family.ledger();
  REQUIRE(ledger.rows.size() == 4);
  std::size_t sum = ledger.stream_bytes; // the family's capture stream is in no row
  for (const auto& row : ledger.rows) {
    sum += row.pool_device_bytes + row.executable_bytes;
    CHECK(row.executable);
  }
  CHECK(sum == ledger.total_bytes()); // an H100 (session 22): a 2 MiB piece for that stream
  CHECK(ledger.pool_reserved_bytes == family.pool().statistics().reserved_bytes);
  // A stream-ordered pool's reserve (32 MiB on an H100 for the 2 MiB slab) counts: without it
  // the ledger missed 32 MiB of the drop (session 21).
  CHECK(ledger.pool_device_bytes == family.pool().statistics().device_bytes);
  CHECK(ledger.pool_device_bytes >= ledger.pool_reserved_bytes);
  CHECK(ledger.pool_high_water_bytes >= 8 * bytes);
  CHECK(distance(ledger.total_bytes(), drop) <= piece);
  CHECK(family.report().find("ledger: ") != std::string::npos);
}

TEST_CASE_METHOD(ledger_fixture, "family release_executables, then restore or a lazy replay") {
  gc::graph_family<> family;
  REQUIRE(family.capture_all({1, 2, 4}, stream, work()).complete());
  const std::size_t executables = family.ledger().executable_bytes;
  family.release_executables();
  CHECK(family.ledger().executable_held_bytes == executables);
  CHECK(family.find(4)->state() == gc::graph_state::captured);
  family.restore_executables();
  CHECK(family.find(4)->state() == gc::graph_state::instantiated);
  check_replay(family, 3, 4);
  check_replay(family, 2, 2);
  family.release_executables();
  check_replay(family, 1, 1); // instantiated at its first replay
  check_replay(family, 4, 4);
}

TEST_CASE_METHOD(ledger_fixture, "capture_all under a byte budget stays within it") {
  gc::graph_family<> whole;
  REQUIRE(whole.capture_all({1, 2, 4, 8}, stream, work()).complete());
  // The prediction assumes no room in the driver's pieces (whole's last one may have some): a
  // piece more for the largest key that fits.
  const std::size_t budget = whole.ledger().total_bytes() + 2 * piece;
  const std::size_t before = free_now();
  gc::graph_family<> family;
  const auto result = family.capture_all({1, 2, 4, 8, 64}, gc::byte_budget{budget}, stream, work());
  const std::size_t drop = before - free_now();
  CHECK(drop <= budget);
  REQUIRE(family.size() >= 1);
  for (const auto& out : result.left_out) {
    if (out.key < family.keys().back()) {
      CHECK(*family.find_at_least(out.key) > out.key);
    }
  }
  check_replay(family, 1, family.keys().front());
}

TEST_CASE_METHOD(ledger_fixture, "capture_all under a budget no key fits: family_budget_error") {
  gc::graph_family<> family;
  CHECK_THROWS_AS(
      static_cast<void>(family.capture_all({1, 2}, gc::byte_budget{16}, stream, work())),
      gc::family_budget_error);
  CHECK(family.size() == 0);
}
