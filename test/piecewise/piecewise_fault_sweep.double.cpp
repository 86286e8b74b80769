// The fault sweep of piecewise graphs (#44): a capture with 3 breaks (a pool block written in
// every segment, each island's own CUDA call), replays, a replay whose island throws, a recapture
// with more breaks and one with fewer, the graph replaced. Every CUDA call of a clean run fails
// once in turn, and the user's exception is thrown at each point of the work
// (test/support/step_sweep.hpp): a failed capture or recapture leaves the graph empty (or, a
// recapture refused before it began, replaying its capture as before) and no stream capturing, a
// failed replay leaves it replayable, and the same step succeeds once the fault is gone, every
// replay writing what its capture said.
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "fault_sweep.hpp"
#include "step_sweep.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <vector>

namespace gc = graphcap;

namespace {

using gcsweep::phase;
using gcsweep::phases;
using gctest::own;

constexpr std::size_t region = 64; // one per segment
constexpr std::size_t regions = 6;

void CUDART_CB tick(void* counter) {
  ++*static_cast<int*>(counter);
}

class scenario {
public:
  static constexpr std::size_t steps = 9;

  [[nodiscard]] phase where(std::size_t step) const {
    constexpr phase order[steps] = {phase::capture, phase::replay,  phase::replay,
                                    phase::replay,  phase::capture, phase::replay,
                                    phase::capture, phase::replay,  phase::teardown};
    return order[step];
  }

  void run(std::size_t step) {
    switch (step) {
    case 0:
      capture(3, 1);
      break;
    case 2: { // island 1 throws: the replay stops there, and the graph stays replayable
      throw_in_island_ = true;
      try {
        step_.replay(stream_);
        FAIL_CHECK("the island's exception did not stop the replay");
      } catch (const gc::island_error& failure) {
        throw_in_island_ = false;
        if (failure.island() != 1) { // an earlier island's own call failed: the case's failure
          throw;
        }
      }
      throw_in_island_ = false;
      own(cudaStreamSynchronize(stream_), "synchronize");
      break;
    }
    case 4:
      recapture(4, 2);
      break;
    case 6:
      recapture(1, 3);
      break;
    case 8:
      step_ = gc::piecewise_graph<>{};
      break;
    default: // 1, 3, 5, 7
      replay_and_check();
      break;
    }
  }

  void failed(std::size_t step, const gcsweep::outcome& /*result*/) {
    throw_in_island_ = false;
    CHECK_FALSE(gctest::capturing(stream_));
    if (where(step) == phase::capture && !step_.empty()) {
      CHECK(step != 0);
      replay_and_check(); // a recapture refused before it began keeps the capture, which replays
    } else if (where(step) == phase::replay) {
      CHECK_FALSE(step_.empty());
    }
  }

  [[nodiscard]] std::vector<gcsweep::absorption> absorptions() const {
    return {
        {"cudaGraphDestroy", phases(phase::capture, phase::teardown),
         "teardown never throws: a segment's template once instantiated, a dropped segment's"},
        {"cudaGraphExecDestroy", phases(phase::capture, phase::teardown),
         "teardown never throws: a segment dropped by a recapture with fewer breaks, the graph "
         "replaced"},
        {"cudaFree", phases(phase::capture, phase::teardown),
         "the private pool's slabs: a failed free leaks one; the probe slab of a segment's "
         "give-back (a recapture's) that waits for the device, freed again if that fails"},
        {"cudaMalloc", phases(phase::capture, phase::teardown),
         "a segment's give-back to the shared pool waits for the device with a probe slab (no "
         "completion marker, #48): if none can be made, cudaDeviceSynchronize waits instead"},
        {"cudaGetDevice", phases(phase::capture, phase::teardown),
         "the device a pool notes with its first slab, and the current one that wait would "
         "switch back to: the current one"},
        {"cudaThreadExchangeStreamCaptureMode", phases(phase::capture, phase::teardown),
         "the relaxed capture-mode guard: the call runs in the thread's mode"},
        {"cudaGetLastError", phases(phase::capture),
         "clearing the error of a failure graphcap handled"},
        {"cudaGraphExecUpdate", phases(phase::capture),
         "a recapture's segment that CUDA cannot update in place is instantiated anew (its "
         "update_result says so)"},
        {"cudaStreamDestroy", phases(phase::teardown), "teardown never throws: the pool's stream"},
    };
  }

  [[nodiscard]] gcsweep::allowed_leftovers leftovers(const gcsweep::call& /*failing*/) const {
    return {.malloced_slabs = true};
  }

private:
  // Segment k sets region k to value + k; the last copies the block to the host; island k ticks.
  template <class Scope>
  void work(Scope& cap, std::size_t breaks, int value) {
    step_sweep::user_point();
    auto* block = cap.template allocate<unsigned char>(region * regions);
    for (std::size_t k = 0; k <= breaks; ++k) {
      own(cudaMemsetAsync(block + k * region, value + static_cast<int>(k), region, cap.stream()),
          "memset");
      if (k == breaks) {
        break;
      }
      cap.eager([this, k](cudaStream_t s) {
        if (k == 1 && throw_in_island_) {
          throw gcsweep::user_exception{};
        }
        own(cudaLaunchHostFunc(s, tick, &ticks_), "the island's host function");
      });
      step_sweep::user_point();
    }
    own(cudaMemcpyAsync(host_.data(), block, host_.size(), cudaMemcpyDeviceToHost, cap.stream()),
        "copy to the host");
  }
  void capture(std::size_t breaks, int value) {
    breaks_ = breaks;
    value_ = value;
    step_.capture(stream_, [&](auto& cap) { work(cap, breaks, value); });
  }
  void recapture(std::size_t breaks, int value) {
    if (step_.empty()) { // a failed recapture left it empty: capture again
      capture(breaks, value);
      return;
    }
    const std::vector<gc::update_result> updates =
        step_.recapture(stream_, [&](auto& cap) { work(cap, breaks, value); });
    CHECK(updates.size() == breaks + 1);
    breaks_ = breaks;
    value_ = value;
  }
  void replay_and_check() {
    std::fill(host_.begin(), host_.end(), 0);
    ticks_ = 0;
    step_.replay(stream_);
    own(cudaStreamSynchronize(stream_), "synchronize");
    CHECK(step_.segment_count() == breaks_ + 1);
    CHECK(static_cast<std::size_t>(ticks_) == breaks_);
    for (std::size_t k = 0; k <= breaks_; ++k) {
      INFO("region " << k);
      CHECK(host_[k * region] == value_ + static_cast<int>(k));
      CHECK(host_[k * region + region - 1] == value_ + static_cast<int>(k));
    }
  }

  gctest::stream stream_;
  std::vector<unsigned char> host_ = std::vector<unsigned char>(region * regions, 0);
  gc::piecewise_graph<> step_;
  std::size_t breaks_ = 0;
  int value_ = 0;
  int ticks_ = 0;
  bool throw_in_island_ = false;
};

} // namespace

TEST_CASE("piecewise fault sweep: 3 breaks, a throwing island, recaptures with more and fewer") {
  const step_sweep::counts done = step_sweep::sweep<scenario>("piecewise");
  CHECK(done.injections >= 50);
  CHECK(done.throws == 3 + 1 + 4 + 1 + 1 + 1); // the work's points in the three captures
}
