// liveness::free_watch on the CUDA test double: the driver queries a checked replay makes with a
// watch running (none while nothing was freed, all of them after any free), each call that frees
// moving the watch, and the watch sharing CUPTI's one subscriber with diagnostics and annotations.
#include <graphcap/free_watch.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/pool/detail/vmm_driver.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cuda_double/control.hpp>
#include <cuda_double/cupti_control.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace gc = graphcap;

namespace {

using checked_graph = gc::graph_with<gc::liveness::check>;

constexpr std::size_t bytes = 1024;

/// The double reset before anything else of a case is made.
struct fresh_double {
  fresh_double() { cuda_double::reset(); }
};

/// A fresh double, a stream, three input allocations and a checked graph that reads them.
struct watched_setup : fresh_double {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> a{bytes};
  gctest::device_buffer<unsigned char> b{bytes};
  gctest::device_buffer<unsigned char> c{bytes};
  checked_graph graph;

  void capture() {
    graph.capture(stream, [&](cudaStream_t s) {
      CUDA_REQUIRE(cudaMemcpyAsync(b.get(), a.get(), 256, cudaMemcpyDeviceToDevice, s));
      CUDA_REQUIRE(cudaMemsetAsync(c.get(), 1, 256, s));
    });
  }

  /// The buffer-id queries one replay makes.
  std::size_t queries_of_a_replay() {
    cuda_double::clear_call_counts();
    graph.replay(stream);
    return cuda_double::calls("cuPointerGetAttribute");
  }
};

void* device_memory() {
  void* memory = nullptr;
  CUDA_REQUIRE(cudaMalloc(&memory, bytes));
  return memory;
}

} // namespace

TEST_CASE("with a free watch, replays ask nothing until something is freed") {
  watched_setup setup;
  const gc::liveness::free_watch watch;
  REQUIRE(watch.active());
  setup.capture();
  CHECK(setup.queries_of_a_replay() == 3); // the first replay checks in full
  CHECK(setup.queries_of_a_replay() == 0); // nothing freed since: one load
  CHECK(setup.queries_of_a_replay() == 0);
  CUDA_REQUIRE(cudaFree(device_memory()));
  CHECK(setup.queries_of_a_replay() == 3); // a free: all of it again
  CHECK(setup.queries_of_a_replay() == 0);
}

TEST_CASE("without a free watch, or once it stopped, every replay checks in full") {
  watched_setup setup;
  setup.capture();
  CHECK(setup.queries_of_a_replay() == 3);
  CHECK(setup.queries_of_a_replay() == 3);
  gc::liveness::free_watch watch;
  CHECK(setup.queries_of_a_replay() == 3);
  CHECK(setup.queries_of_a_replay() == 0);
  watch.stop();
  CHECK(setup.queries_of_a_replay() == 3);
  CHECK(setup.queries_of_a_replay() == 3);
  CHECK_FALSE(cuda_double::cupti_subscribed()); // the last watch gave CUPTI back
}

TEST_CASE("every call that frees memory moves the watch") {
  watched_setup setup;
  const gc::liveness::free_watch watch;
  setup.capture();
  const auto& vmm = gc::detail::pool::vmm();
  const auto vmm_range = [&](CUdeviceptr& base, CUmemGenericAllocationHandle& handle) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    std::size_t granularity = 0;
    REQUIRE(vmm.granularity.require("test")(&granularity, &prop,
                                            CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS);
    REQUIRE(vmm.address_reserve.require("test")(&base, granularity, 0, 0, 0) == CUDA_SUCCESS);
    REQUIRE(vmm.create.require("test")(&handle, granularity, &prop, 0) == CUDA_SUCCESS);
    REQUIRE(vmm.map.require("test")(base, granularity, 0, handle, 0) == CUDA_SUCCESS);
    return granularity;
  };
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  const std::size_t size = vmm_range(base, handle);
  const std::function<void()> frees[] = {
      [] { CUDA_REQUIRE(cudaFree(device_memory())); },
      [&] {
        void* memory = nullptr;
        CUDA_REQUIRE(cudaMallocAsync(&memory, bytes, setup.stream));
        CUDA_REQUIRE(cudaFreeAsync(memory, setup.stream));
      },
      [] {
        void* pinned = nullptr;
        CUDA_REQUIRE(cudaMallocHost(&pinned, bytes));
        CUDA_REQUIRE(cudaFreeHost(pinned));
      },
      [&] { REQUIRE(vmm.unmap.require("test")(base, size) == CUDA_SUCCESS); },
      [&] { REQUIRE(vmm.release.require("test")(handle) == CUDA_SUCCESS); },
      [&] { REQUIRE(vmm.address_free.require("test")(base, size) == CUDA_SUCCESS); },
  };
  CHECK(setup.queries_of_a_replay() == 3);
  for (const auto& free_something : frees) {
    CHECK(setup.queries_of_a_replay() == 0);
    free_something();
    CHECK(setup.queries_of_a_replay() == 3);
  }
}

TEST_CASE("a free between the check and the next replay is caught, with a watch") {
  watched_setup setup;
  const gc::liveness::free_watch watch;
  void* source = device_memory();
  setup.graph.capture(setup.stream, [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(setup.b.get(), source, 256, cudaMemcpyDeviceToDevice, s));
  });
  setup.graph.replay(setup.stream);
  setup.graph.replay(setup.stream);
  CUDA_REQUIRE(cudaFree(source));
  cuda_double::clear_call_counts();
  CHECK_THROWS_AS(setup.graph.replay(setup.stream), gc::liveness_error);
  CHECK(cuda_double::calls("cudaGraphLaunch") == 0);
}

TEST_CASE("where CUPTI is held by another tool, the watch is inactive and replays check in full") {
  watched_setup setup;
  cuda_double::set_cupti_held_by_other_tool(true);
  const gc::liveness::free_watch held;
  CHECK_FALSE(held.active());
  CHECK_THAT(held.reason(), gctest::contains("held by another tool"));
  CHECK_THAT(held.reason(), gctest::contains("queries every input at every replay"));
  cuda_double::set_cupti_held_by_other_tool(false);
  cuda_double::set_cupti_subscriber_taken(true);
  const gc::liveness::free_watch taken;
  CHECK_FALSE(taken.active());
  CHECK_THAT(taken.reason(), gctest::contains("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));
  setup.capture();
  CHECK(setup.queries_of_a_replay() == 3);
  CHECK(setup.queries_of_a_replay() == 3);
}

TEST_CASE("the watch keeps seeing frees after diagnostics listened to whole domains and stopped") {
  watched_setup setup;
  const gc::liveness::free_watch watch;
  setup.capture();
  auto& callbacks = gc::detail::creation_callbacks::instance();
  REQUIRE(callbacks.listen_to_api_calls(
              [](CUpti_CallbackDomain, CUpti_CallbackId, const CUpti_CallbackData&) noexcept {}) ==
          CUPTI_SUCCESS);
  CHECK(setup.queries_of_a_replay() == 3);
  CHECK(setup.queries_of_a_replay() == 0); // every call reaches the watcher: only frees count
  CUDA_REQUIRE(cudaFree(device_memory()));
  CHECK(setup.queries_of_a_replay() == 3);
  callbacks.stop_api_calls();
  CHECK(setup.queries_of_a_replay() == 0);
  CUDA_REQUIRE(cudaFree(device_memory())); // its callback was enabled again
  CHECK(setup.queries_of_a_replay() == 3);
  // An annotated capture's share comes and goes: the watch's stays.
  REQUIRE(callbacks.acquire());
  callbacks.release();
  CHECK(setup.queries_of_a_replay() == 0);
  CUDA_REQUIRE(cudaFree(device_memory()));
  CHECK(setup.queries_of_a_replay() == 3);
  CHECK(cuda_double::cupti_subscribed());
}
