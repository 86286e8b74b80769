// The fault sweep of pool::sleepable (#44): a graph whose capture grows the pool twice, replayed,
// put to sleep and woken, a second graph growing the same pool, and a second sleep and wake,
// with backup::none and with backup::host. Every CUDA and driver call of a clean run (the VMM
// calls cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess, cuMemRelease, cuMemUnmap,
// cuMemAddressFree among them) fails once in turn, and the user's exception is thrown at each
// point of the captures' work (test/support/step_sweep.hpp): each failing step leaves the pool
// consistent (a failed growth: the capture failed and the pool is as before; a failed sleep:
// awake and unchanged, or asleep with some memory held; a failed wake: asleep, no memory, its
// backup kept), the same step succeeds once the fault is gone, and with backup::host the
// contents written before the sleep are there after the wake.
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "driver_testing.hpp"
#include "fault_sweep.hpp"
#include "step_sweep.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

using gcsweep::phase;
using gcsweep::phases;
using gctest::own;
using sleepy_graph = gc::graph_with<gc::pool::sleepable>;

constexpr std::size_t small = 4096;
constexpr std::size_t large = std::size_t{3} << 20; // a slab of its own (4 MiB): a growth

/// Every VMM function the pool looks up again at its next use.
void forget_vmm_functions() noexcept {
  const auto& table = gc::detail::pool::vmm();
  using testing = gc::detail::driver_testing;
  testing::forget(table.granularity);
  testing::forget(table.address_reserve);
  testing::forget(table.address_free);
  testing::forget(table.create);
  testing::forget(table.release);
  testing::forget(table.map);
  testing::forget(table.unmap);
  testing::forget(table.set_access);
}

bool holds(const unsigned char* block, std::size_t size, int value) {
  std::vector<unsigned char> host(size, 0);
  own(cudaMemcpy(host.data(), block, size, cudaMemcpyDeviceToHost), "read back");
  return host == std::vector<unsigned char>(size, static_cast<unsigned char>(value));
}

template <gc::pool::backup How>
class scenario {
public:
  static constexpr std::size_t steps = 16;

  scenario() {
    forget_vmm_functions();
    // Resolved before the window: every case then makes the same calls (the lookups are not
    // swept: test/pool/sleepable.double.cpp hides them).
    gc::sleepable_pool_handle warm;
    sleepy_graph first{warm};
    std::vector<unsigned char> host(small, 0);
    static_cast<void>(gctest::capture_fill(first, host, 1));
    warm.sleep();
    warm.wake();
  }

  [[nodiscard]] phase where(std::size_t step) const {
    constexpr phase order[steps] = {
        phase::capture, phase::replay, phase::handover, phase::replay,  phase::sleep,  phase::sleep,
        phase::wake,    phase::replay, phase::replay,   phase::capture, phase::replay, phase::sleep,
        phase::wake,    phase::replay, phase::replay,   phase::teardown};
    return order[step];
  }

  void run(std::size_t step) {
    before_ = snapshot();
    switch (step) {
    case 0: // a capture that grows the pool twice (the arena, then a slab of its own)
      blocks_ = graph_.capture([&](sleepy_graph::scope& cap) {
        step_sweep::user_point();
        auto* first = cap.allocate<unsigned char>(small);
        own(cudaMemsetAsync(first, 1, small, cap.stream()), "memset");
        step_sweep::user_point();
        auto* second = cap.allocate<unsigned char>(large);
        own(cudaMemsetAsync(second, 2, large, cap.stream()), "memset");
        own(cudaMemcpyAsync(host_a_.data(), first, small, cudaMemcpyDeviceToHost, cap.stream()),
            "copy to the host");
        step_sweep::user_point();
        return std::vector<unsigned char*>{first, second};
      });
      break;
    case 1:
    case 8:
      replay_a();
      break;
    case 2:
      pool_ = graph_.pool();
      break;
    case 3: // what a backup must bring back
      own(cudaMemset(blocks_[0], 0x42, small), "memset");
      own(cudaMemset(blocks_[1], 0x43, large), "memset");
      break;
    case 4:
    case 11:
      pool_->sleep(How);
      break;
    case 5: // refused while asleep, nothing launched
      CHECK_THROWS_AS(graph_.replay(stream_), gc::state_error);
      break;
    case 6:
    case 12:
      pool_->wake();
      break;
    case 7:
      if (How == gc::pool::backup::host) { // read before the check: a failed read throws
        const bool first = holds(blocks_[0], small, 0x42);
        const bool second = holds(blocks_[1], large, 0x43);
        CHECK(first);
        CHECK(second);
      }
      break;
    case 9: // a second graph grows the same pool
      second_.emplace(*pool_);
      block_b_ = second_->capture([&](sleepy_graph::scope& cap) {
        step_sweep::user_point();
        auto* block = cap.allocate<unsigned char>(large);
        own(cudaMemsetAsync(block, 5, large, cap.stream()), "memset");
        own(cudaMemcpyAsync(host_b_.data(), block, small, cudaMemcpyDeviceToHost, cap.stream()),
            "copy to the host");
        return block;
      });
      break;
    case 10:
      replay_b();
      own(cudaMemset(block_b_, 0x44, large), "memset");
      break;
    case 13: // A's blocks as its replay (step 8) left them, B's as written after its replay
      if (How == gc::pool::backup::host) {
        const bool first = holds(blocks_[0], small, 1);
        const bool second = holds(blocks_[1], large, 2);
        const bool third = holds(block_b_, large, 0x44);
        CHECK(first);
        CHECK(second);
        CHECK(third);
      }
      break;
    case 14:
      replay_a();
      replay_b();
      break;
    case 15:
      second_.reset();
      graph_ = sleepy_graph{};
      pool_.reset();
      break;
    default:
      break;
    }
  }

  void failed(std::size_t step, const gcsweep::outcome& result) {
    const state now = snapshot();
    switch (where(step)) {
    case phase::capture:
      CHECK((step == 0 ? graph_.empty() : second_->empty()));
      CHECK_FALSE(now.asleep);
      if (result.call.rfind("cuMem", 0) == 0) { // a failed growth: the pool is as before
        CHECK(now.reserved == before_.reserved);
        CHECK(now.resident == before_.resident);
        CHECK(cuda_double::live_allocations() == before_.live);
      } else { // a slab grown before the failure stays in the pool, mapped
        CHECK(now.reserved >= before_.reserved);
      }
      if (pool_) {
        CHECK(now.resident == now.reserved);
      }
      break;
    case phase::sleep:
      if (step == 5) {
        break;
      }
      if (now.asleep) { // asleep with some memory held: sleep() again releases the rest
        CHECK_THROWS_AS(graph_.replay(stream_), gc::state_error);
      } else { // the backup failed: nothing changed
        CHECK(now.resident == before_.resident);
        CHECK(now.backup == 0);
        CHECK(now.reserved == before_.reserved);
      }
      break;
    case phase::wake: // asleep, no memory taken, the backup kept
      CHECK(now.asleep);
      CHECK(now.resident == 0);
      CHECK(now.backup == before_.backup);
      CHECK_THROWS_AS(graph_.replay(stream_), gc::state_error);
      break;
    default:
      break;
    }
  }

  [[nodiscard]] std::vector<gcsweep::absorption> absorptions() const {
    std::vector<gcsweep::absorption> rules{
        {"cuMemRelease", phases(phase::capture, phase::wake),
         "a segment's handle released once mapped: should that fail, the handle is kept and the "
         "next sleep (or the slab's free) releases it"},
        {"cudaMalloc", phases(phase::handover, phase::sleep, phase::teardown),
         "pool() of a replayed graph, sleep and a give-back to the shared pool wait for the "
         "device with a probe slab (no completion marker, #48): if none can be made, "
         "cudaDeviceSynchronize waits instead"},
        {"cudaFree", phases(phase::handover, phase::sleep, phase::teardown),
         "that probe slab's free"},
        {"cudaThreadExchangeStreamCaptureMode",
         phases(phase::capture, phase::handover, phase::sleep, phase::wake, phase::teardown),
         "the relaxed capture-mode guard: the call runs in the thread's mode"},
        {"cudaStreamDestroy", phases(phase::teardown), "teardown never throws: the copy stream"},
        {"cudaGraphDestroy", phases(phase::teardown), "teardown never throws: the graphs"},
        {"cudaGraphExecDestroy", phases(phase::teardown), "teardown never throws"},
        {"cuMemUnmap", phases(phase::teardown),
         "a freed slab's segment: the free cannot throw, the mapping is leaked"},
        {"cuMemAddressFree", phases(phase::teardown),
         "the arena of the last slab: the free cannot throw, the reservation is leaked"},
        {"cudaStreamSynchronize", phases(phase::teardown),
         "the pool's stream before its slabs go: a failure frees them all the same"},
        {"cudaGetDevice", phases(phase::capture, phase::handover, phase::sleep, phase::teardown),
         "the device a pool notes with its first slab, and the current one a wait for the device "
         "would switch back to: the current one"},
    };
    if (How == gc::pool::backup::host) {
      rules.push_back(
          {"cudaFreeHost", phases(phase::sleep, phase::teardown),
           "the pinned staging buffers of the backup, freed when a larger backup needs larger "
           "ones and with the pool: a failure leaks the one buffer"});
      rules.push_back({"cudaEventDestroy", phases(phase::teardown),
                       "teardown never throws: the staging buffers' copy events"});
    }
    return rules;
  }

  /// A freed slab's unmap, its arena's address free: a failure in the teardown leaks what it
  /// would have given back (the free cannot throw).
  [[nodiscard]] gcsweep::allowed_leftovers leftovers(const gcsweep::call& failing) const {
    if (failing.function == "cudaFreeHost") { // a staging buffer
      return {.allocations = 1};
    }
    if (failing.where != phase::teardown) {
      return {};
    }
    if (failing.function == "cuMemUnmap") { // the segment stays: its memory, its mapping, its
      return {.allocations = 3};            // arena (whose free CUDA refuses while mapped)
    }
    return {.allocations = failing.function == "cuMemAddressFree" ? 1U : 0U};
  }

private:
  struct state {
    bool asleep = false;
    std::size_t resident = 0;
    std::size_t backup = 0;
    std::size_t reserved = 0;
    std::size_t live = 0;
  };
  [[nodiscard]] state snapshot() const {
    if (!pool_) {
      return {false, 0, 0, graph_.pool_statistics().reserved_bytes,
              cuda_double::live_allocations()};
    }
    return {pool_->asleep(), pool_->resident_bytes(), pool_->backup_bytes(),
            pool_->statistics().reserved_bytes, cuda_double::live_allocations()};
  }
  void replay_a() {
    std::fill(host_a_.begin(), host_a_.end(), 0);
    graph_.replay(stream_);
    own(cudaStreamSynchronize(stream_), "synchronize");
    CHECK(host_a_ == std::vector<unsigned char>(small, 1));
  }
  void replay_b() {
    std::fill(host_b_.begin(), host_b_.end(), 0);
    second_->replay(stream_);
    own(cudaStreamSynchronize(stream_), "synchronize");
    CHECK(host_b_ == std::vector<unsigned char>(small, 5));
  }

  gctest::stream stream_;
  std::vector<unsigned char> host_a_ = std::vector<unsigned char>(small, 0);
  std::vector<unsigned char> host_b_ = std::vector<unsigned char>(small, 0);
  sleepy_graph graph_;
  std::optional<gc::sleepable_pool_handle> pool_;
  std::optional<sleepy_graph> second_;
  std::vector<unsigned char*> blocks_;
  unsigned char* block_b_ = nullptr;
  state before_;
};

} // namespace

TEST_CASE("sleepable fault sweep: growth, sleep and wake without a backup") {
  const step_sweep::counts done =
      step_sweep::sweep<scenario<gc::pool::backup::none>>("sleepable, backup::none");
  CHECK(done.injections >= 30);
  CHECK(done.throws == 4);
}

TEST_CASE("sleepable fault sweep: growth, sleep and wake with a host backup") {
  const step_sweep::counts done =
      step_sweep::sweep<scenario<gc::pool::backup::host>>("sleepable, backup::host");
  CHECK(done.injections >= 30);
  CHECK(done.throws == 4);
}
