// The fault sweep of a one-executable graph_family (#44): keys 1, 2 and 4 captured into one pool
// (one executable for their topology), replays that switch the executable between keys (the
// memset nodes that differ set, node_patch.hpp; cudaGraphExecUpdate from
// the key's template where a set fails) and one that does not, the family destroyed.
// Every CUDA call of a clean run fails once in turn, and the user's exception is thrown at each
// point of the work (test/support/step_sweep.hpp): a failed capture_all leaves the family with
// the keys that captured, a failed switch leaves every key and the family replayable, and the
// same step succeeds once the fault is gone, each replay writing its key's value. The same for a
// family of piecewise graphs (session 19), whose switches switch each segment's executable.
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "fault_sweep.hpp"
#include "step_sweep.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <optional>
#include <vector>

namespace gc = graphcap;

namespace {

using gcsweep::phase;
using gcsweep::phases;
using gctest::own;

constexpr std::size_t bytes = 256;

/// What a one-executable family absorbs of a failing call, and why.
std::vector<gcsweep::absorption> family_absorptions() {
  return {
      {"cudaGraphDestroy", phases(phase::teardown), "teardown never throws: the templates"},
      {"cudaGraphExecDestroy", phases(phase::teardown), "teardown never throws"},
      {"cudaStreamDestroy", phases(phase::teardown), "teardown never throws: the streams"},
      {"cudaFreeAsync", phases(phase::teardown),
       "a slab whose stream-ordered free fails is freed with cudaFree"},
      {"cudaMalloc", phases(phase::teardown),
       "each graph's give-back to the family's pool waits for the device with a probe slab "
       "(no completion marker, #48): if none can be made, cudaDeviceSynchronize waits instead"},
      {"cudaFree", phases(phase::teardown), "that probe slab's free, tried again if it fails"},
      {"cudaGetDevice", phases(phase::capture, phase::teardown),
       "the device a pool notes with its first slab, and the current one that wait would "
       "switch back to: the current one"},
      {"cudaGraphExecMemsetNodeSetParams", phases(phase::select),
       "a set the patch switch cannot make falls back to cudaGraphExecUpdate"},
      {"cudaThreadExchangeStreamCaptureMode", phases(phase::capture, phase::teardown),
       "the relaxed capture-mode guard: the call runs in the thread's mode"},
  };
}

/// A one-executable family of `Graph`s over keys 1, 2 and 4: each key's work a memset of a pool
/// temporary and a copy of it to the host, with an island between them where `Graph` is a
/// piecewise graph (each switch then switches two segments' executables).
template <class Graph>
class scenario {
public:
  static constexpr std::size_t steps = 6;
  static constexpr bool piecewise = requires { typename Graph::segment_type; };

  [[nodiscard]] phase where(std::size_t step) const {
    constexpr phase order[steps] = {phase::capture, phase::select, phase::select,
                                    phase::select,  phase::replay, phase::teardown};
    return order[step];
  }

  void run(std::size_t step) {
    switch (step) {
    case 0: {
      family_->clear(); // a failed capture_all left the keys that captured: start again
      const auto result = family_->capture_all(
          {1, 2, 4}, stream_, [&](std::size_t key, typename Graph::scope& cap) {
            step_sweep::user_point();
            auto* temporary = cap.template allocate<unsigned char>(bytes * key);
            own(cudaMemsetAsync(temporary, static_cast<int>(key), bytes * key, cap.stream()),
                "memset");
            if constexpr (piecewise) {
              cap.eager([this](cudaStream_t /*s*/) { ++islands_; });
            }
            own(cudaMemcpyAsync(host_.data(), temporary, bytes, cudaMemcpyDeviceToHost,
                                cap.stream()),
                "copy to the host");
            cap.deallocate(temporary);
          });
      result.rethrow_first_failure();
      CHECK(family_->executables() == (piecewise ? 2 : 1)); // one per segment position
      break;
    }
    case 1:
      replay(3, 4);
      break;
    case 2:
      replay(1, 1);
      break;
    case 3:
    case 4:
      replay(2, 2);
      break;
    case 5:
      family_.reset();
      break;
    default:
      break;
    }
  }

  void failed(std::size_t step, const gcsweep::outcome& /*result*/) {
    CHECK_FALSE(gctest::capturing(stream_));
    if (where(step) == phase::select || where(step) == phase::replay) {
      CHECK(family_->size() == 3); // every key kept
    }
  }

  [[nodiscard]] std::vector<gcsweep::absorption> absorptions() const {
    return family_absorptions(); // a piecewise key's segments absorb what a plain key does
  }

  [[nodiscard]] gcsweep::allowed_leftovers leftovers(const gcsweep::call& /*failing*/) const {
    return {};
  }

private:
  void replay(std::size_t n, std::size_t key) {
    std::fill(host_.begin(), host_.end(), 0);
    const int before = islands_;
    const std::size_t replayed = family_->replay_at_least(n, stream_); // throws outside a CHECK
    CHECK(replayed == key);
    own(cudaStreamSynchronize(stream_), "synchronize");
    CHECK(islands_ == (piecewise ? before + 1 : before));
    CHECK(host_ == std::vector<unsigned char>(bytes, static_cast<unsigned char>(key)));
  }

  gctest::stream stream_;
  int islands_ = 0;
  std::vector<unsigned char> host_ = std::vector<unsigned char>(bytes, 0);
  std::optional<gc::graph_family<std::size_t, Graph>> family_{
      gc::graph_family<std::size_t, Graph>{{.one_executable = true}}};
};

} // namespace

TEST_CASE("family fault sweep: a one-executable family switching between keys") {
  const step_sweep::counts done =
      step_sweep::sweep<scenario<gc::shared_pool_graph>>("graph_family one_executable");
  CHECK(done.injections >= 30);
  CHECK(done.throws == 3);
}

TEST_CASE("family fault sweep: a one-executable family of piecewise graphs switching keys") {
  const step_sweep::counts done =
      step_sweep::sweep<scenario<gc::piecewise_graph<gc::shared_pool_graph>>>(
          "graph_family of piecewise graphs, one_executable");
  CHECK(done.injections >= 40);
  CHECK(done.throws == 3);
}
