// The fault sweep of graphcap::rebinder (#44): a kept graph reading x in two kernels and a
// memcpy; a rebinder constructed over x, rebinds to x2 and back, the graph recaptured and the
// rebinder rescanned, a rebind after it. Every CUDA and driver call of a clean run fails once in
// turn (test/support/step_sweep.hpp). Each failure leaves the inputs, the executable (what a
// replay reads) and the template (each node's patched parameter, read back) as they were, or,
// for a template patch that fails once the executable was patched, the documented state: the
// inputs and the executable moved, and sync_template() finishing the template (docs/rebinding.md,
// Errors). The user's exception is thrown in the recapture's work. The same step then succeeds.
#include <graphcap/graphcap.hpp>
#include <graphcap/rebind.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "fault_sweep.hpp"
#include "rebind_kernels.cuh"
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

constexpr unsigned n = 64;

void fill(float* device, float value) {
  const std::vector<float> host(n, value);
  own(cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "fill");
}

float first(const float* device) {
  float value = 0;
  own(cudaMemcpy(&value, device, sizeof value, cudaMemcpyDeviceToHost), "read back");
  return value;
}

/// `Every`: the rebinder registers all_inputs (every external allocation), else x alone.
template <bool Every>
class scenario {
public:
  static constexpr std::size_t steps = 9;

  scenario() {
    gctest::model_rebind_kernels();
    fill(x_.get(), 1.0F);
    fill(x2_.get(), 5.0F);
    capture();
    graph_.instantiate();
    // The driver functions resolved before the window, as by any earlier use.
    gc::rebinder<gc::lean_graph> warm{graph_, {x_.get()}};
    warm.rebind(x_.get(), x2_.get());
    warm.rebind(x2_.get(), x_.get());
  }

  [[nodiscard]] phase where(std::size_t step) const {
    constexpr phase order[steps] = {phase::rebind, phase::rebind,  phase::replay,
                                    phase::rebind, phase::capture, phase::rebind,
                                    phase::rebind, phase::replay,  phase::teardown};
    return order[step];
  }

  void run(std::size_t step) {
    before_ = snapshot();
    switch (step) {
    case 0:
      if constexpr (Every) {
        inputs_.emplace(graph_, gc::all_inputs);
      } else {
        inputs_.emplace(graph_, std::initializer_list<gc::rebind_input>{x_.get()});
      }
      break;
    case 1:
    case 6:
      move_to(x2_.get(), step == 1); // the size asked of CUDA in the first, given in the second
      break;
    case 2:
    case 7: {
      const float y = replayed(); // throws outside a CHECK
      CHECK(y == 10.0F);
      break;
    }
    case 3:
      move_to(x_.get(), false);
      break;
    case 4: // a failed recapture left the graph empty: capture it again
      if (graph_.empty()) {
        capture();
      } else {
        static_cast<void>(graph_.recapture(stream_, [&](cudaStream_t s) { work(s); }));
      }
      break;
    case 5:
      inputs_->rescan();
      CHECK(inputs_->is_input(x_.get()));
      CHECK(inputs_->site_count(x_.get()) == 3);
      break;
    case 8:
      inputs_.reset();
      break;
    default:
      break;
    }
  }

  void failed(std::size_t step, const gcsweep::outcome& result) {
    static_cast<void>(cudaGetLastError());
    if (result.what == gcsweep::outcome::kind::own_failure) {
      return; // the test's own read failed (the snapshot, a read back), not graphcap
    }
    const view now = snapshot();
    INFO("after the failure of step " << step << ": " << result.message);
    switch (where(step)) {
    case phase::rebind: {
      if (step == 0) {
        CHECK_FALSE(inputs_.has_value());
        CHECK(now.template_reads == before_.template_reads);
        break;
      }
      if (step != 5 && now.moved_to != before_.moved_to) {
        // A template patch failed after the executable's: the inputs and the executable moved
        // (the next step's sync_template() finishes the template).
        CHECK(result.call.find("NodeSetParams") != std::string::npos);
        CHECK(result.call.find("Exec") == std::string::npos);
        break;
      }
      CHECK(now.moved_to == before_.moved_to);
      CHECK(now.template_reads == before_.template_reads);
      const void* const reads = exec_reads();
      CHECK(reads == before_.moved_to);
      break;
    }
    case phase::capture:     // a failed recapture: the graph is empty, or (refused before it began)
      if (!graph_.empty()) { // replays as before
        const void* const reads = exec_reads();
        CHECK(reads == before_.moved_to);
      }
      break;
    default:
      break;
    }
  }

  [[nodiscard]] std::vector<gcsweep::absorption> absorptions() const {
    return {
        {"cudaGraphDestroy", phases(phase::capture), "teardown never throws: the old template"},
        {"cudaGraphExecDestroy", phases(phase::rebind),
         "teardown never throws: the executable a rescan instantiates anew"},
        {"cudaGraphExecUpdate", phases(phase::capture),
         "a recapture CUDA cannot update in place is instantiated anew (its update_result)"},
        {"cudaThreadExchangeStreamCaptureMode", phases(phase::capture, phase::rebind),
         "the relaxed capture-mode guard: the call runs in the thread's mode"},
        {"cudaGetLastError", phases(phase::capture, phase::rebind),
         "clearing the error of a failure graphcap handled"},
    };
  }

  [[nodiscard]] gcsweep::allowed_leftovers leftovers(const gcsweep::call& /*failing*/) const {
    return {};
  }

private:
  struct view {
    const void* moved_to = nullptr;          // the input's current address
    std::vector<const void*> template_reads; // each node's x operand in the template
  };

  void work(cudaStream_t s) {
    step_sweep::user_point(); // in the recapture (the constructor's capture is not swept)
    gctest::launch_axpy(s, y_.get(), x_.get(), 1.0F, n);
    own(cudaGetLastError(), "kernel launch");
    gctest::launch_axpy(s, y_.get(), x_.get(), 1.0F, n);
    own(cudaGetLastError(), "kernel launch");
    own(cudaMemcpyAsync(copy_.get(), x_.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s),
        "memcpy");
  }
  void capture() {
    graph_.capture(stream_, [&](cudaStream_t s) { work(s); });
  }
  // Rebinds the input to `target`, or (a template patch failed after the executable's) finishes
  // the template.
  void move_to(const float* target, bool ask_size) {
    if (inputs_->is_input(target)) {
      inputs_->sync_template();
      return;
    }
    const float* from = target == x_.get() ? x2_.get() : x_.get();
    if (ask_size) {
      inputs_->rebind(from, target);
    } else {
      inputs_->rebind(from, target, n * sizeof(float));
    }
  }
  [[nodiscard]] view snapshot() const {
    view now;
    if (inputs_) {
      now.moved_to = inputs_->is_input(x_.get())    ? static_cast<const void*>(x_.get())
                     : inputs_->is_input(x2_.get()) ? static_cast<const void*>(x2_.get())
                                                    : nullptr;
    } else {
      now.moved_to = x_.get();
    }
    if (graph_.empty()) {
      return now;
    }
    std::size_t count = 0;
    own(cudaGraphGetNodes(graph_.raw_graph(), nullptr, &count), "cudaGraphGetNodes");
    std::vector<cudaGraphNode_t> nodes(count);
    own(cudaGraphGetNodes(graph_.raw_graph(), nodes.data(), &count), "cudaGraphGetNodes");
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      own(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
      if (type == cudaGraphNodeTypeKernel) {
        cudaKernelNodeParams params{};
        own(cudaGraphKernelNodeGetParams(node, &params), "cudaGraphKernelNodeGetParams");
        now.template_reads.push_back(*static_cast<const void* const*>(params.kernelParams[1]));
      } else if (type == cudaGraphNodeTypeMemcpy) {
        cudaMemcpy3DParms params{};
        own(cudaGraphMemcpyNodeGetParams(node, &params), "cudaGraphMemcpyNodeGetParams");
        now.template_reads.push_back(params.srcPtr.ptr);
      }
    }
    return now;
  }
  // Which buffer the executable reads: a replay from y = 0 gives 2 * x[0].
  [[nodiscard]] const void* exec_reads() {
    const float y = replayed();
    return y == 2.0F ? static_cast<const void*>(x_.get())
                     : (y == 10.0F ? static_cast<const void*>(x2_.get()) : nullptr);
  }
  float replayed() {
    fill(y_.get(), 0.0F);
    graph_.replay(stream_);
    own(cudaStreamSynchronize(stream_), "synchronize");
    const float y = first(y_.get());
    const float copied = first(copy_.get());
    CHECK(copied * 2 == y);
    return y;
  }

  gctest::stream stream_;
  gctest::device_buffer<float> x_{n};
  gctest::device_buffer<float> x2_{n};
  gctest::device_buffer<float> y_{n};
  gctest::device_buffer<float> copy_{n};
  gc::lean_graph graph_{gc::keep_graph};
  std::optional<gc::rebinder<gc::lean_graph>> inputs_;
  view before_;
};

} // namespace

TEST_CASE("rebind fault sweep: construction, rebinds, a recapture and a rescan") {
  const step_sweep::counts done = step_sweep::sweep<scenario<false>>("rebinder, one input");
  CHECK(done.injections >= 20);
  CHECK(done.throws == 1);
}

TEST_CASE("rebind fault sweep: the same with all_inputs") {
  const step_sweep::counts done = step_sweep::sweep<scenario<true>>("rebinder, all_inputs");
  CHECK(done.injections >= 20);
  CHECK(done.throws == 1);
}
