// Islands with a per-replay context (piecewise_graph<Graph, Context>), on both backends: every
// island taking (cudaStream_t, Context&) gets the object replay(stream, ctx) was given, the same
// one for every island of the step, and islands written for the stream alone still run; a
// recapture keeps the context type. Observed through host functions and memsets on the stream.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace gc = graphcap;

namespace {

/// What a decode step's islands read each step: host values that change between replays.
struct step_context {
  std::size_t length = 0;        // the bytes the island clears (a host-valued size)
  unsigned char value = 0;       // what it writes
  int islands_run = 0;           // written back by the islands
  std::vector<std::size_t> seen; // the lengths the islands saw, in order
};

using step_graph = gc::piecewise_graph<gc::graph, step_context>;

static_assert(std::is_same_v<step_graph::context_type, step_context>);
static_assert(std::is_same_v<gc::piecewise_graph<>::context_type, void>);
static_assert(std::is_same_v<gc::piecewise_graph<>::island_type,
                             std::function<void(cudaStream_t)>>); // the lean form, unchanged

std::vector<unsigned char> read(const unsigned char* device, std::size_t count) {
  std::vector<unsigned char> host(count);
  CUDA_REQUIRE(cudaMemcpy(host.data(), device, count, cudaMemcpyDeviceToHost));
  return host;
}

} // namespace

TEST_CASE("piecewise context: every island gets the replay's context, each replay its own") {
  gctest::stream stream;
  constexpr std::size_t bytes = 64;
  const gctest::device_buffer<unsigned char> out(bytes);
  CUDA_REQUIRE(cudaMemset(out.get(), 0, bytes));
  int stream_only_runs = 0;
  step_graph step;
  step.capture(stream, [&](step_graph::scope& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(out.get(), 1, bytes, cap.stream())); // segment 0
    cap.eager([&](cudaStream_t s, step_context& ctx) {                // island 0: the context
      CUDA_REQUIRE(cudaMemsetAsync(out.get(), ctx.value, ctx.length, s));
      ctx.seen.push_back(ctx.length);
      ++ctx.islands_run;
    });
    cap.eager([&](cudaStream_t /*s*/) { ++stream_only_runs; }); // island 1: the stream alone
    cap.eager([](cudaStream_t /*s*/, const step_context& ctx) { // island 2: a const context
      CHECK(ctx.islands_run == 1);
    });
  });
  REQUIRE(step.island_count() == 3);
  step_context first{16, 7, 0, {}};
  step.replay(stream, first);
  stream.synchronize();
  CHECK(first.islands_run == 1);
  CHECK(first.seen == std::vector<std::size_t>{16});
  std::vector<unsigned char> host = read(out.get(), bytes);
  CHECK(host[15] == 7);
  CHECK(host[16] == 1);
  step.replay(stream, step_context{32, 9, 0, {}}); // a temporary: handed as an lvalue
  stream.synchronize();
  host = read(out.get(), bytes);
  CHECK(host[31] == 9);
  CHECK(host[32] == 1);
  CHECK(stream_only_runs == 2);
}

TEST_CASE("piecewise context: an island that throws is an island_error, a recapture keeps it") {
  gctest::stream stream;
  step_graph step;
  const auto work = [](auto& cap) {
    cap.eager([](cudaStream_t /*s*/, step_context& ctx) {
      if (ctx.length == 0) {
        throw std::runtime_error("no length");
      }
      ++ctx.islands_run;
    });
  };
  step.capture(stream, work);
  step_context empty;
  CHECK_THROWS_AS(step.replay(stream, empty), gc::island_error);
  step_context some{4, 0, 0, {}};
  step.replay(stream, some);
  CHECK(some.islands_run == 1);
  const auto updates = step.recapture(stream, work);
  CHECK(updates.size() == 2);
  step.replay(stream, some);
  CHECK(some.islands_run == 2);
  step.reset();
  CHECK_THROWS_AS(step.replay(stream, some), gc::state_error);
}
