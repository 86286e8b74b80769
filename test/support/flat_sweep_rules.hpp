// test/support/flat_sweep_rules.hpp - what a failure in flat_sweep.hpp must give: the
// failures graphcap absorbs by design, each for the scenario steps its reason covers, and the
// error type every other failure must surface as.
#pragma once

#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "fault_sweep.hpp"

#include <string_view>
#include <type_traits>
#include <vector>

namespace flat_sweep {

namespace gc = graphcap;
using gcsweep::phase;
using gcsweep::phases;

/// Whether the pool's slabs come from cudaMalloc (a private pool's; with the NVTX regions a
/// shared pool's too, a user pool's never).
template <class Graph>
constexpr bool malloced_slabs() {
  using pool = typename Graph::pool_type;
  return std::is_same_v<pool, gc::pool::private_pool> ||
         (gc::detail::pool::nvtx_regions::enabled && pool::has_handle && pool::can_allocate &&
          !std::is_same_v<pool, gc::pool::user>);
}

/// The failures graphcap absorbs by design, each only in the steps its reason covers (what the
/// sweep found, no more). Everything else must throw.
template <class Graph>
std::vector<gcsweep::absorption> absorptions() {
  using pool = typename Graph::pool_type;
  std::vector<gcsweep::absorption> rules{
      {"cudaGraphDestroy",
       phases(phase::capture, phase::discard, phase::reset, phase::loop, phase::teardown),
       "teardown never throws: a failed destroy leaks its one graph (a template, kept or not, "
       "goes with reset or the graph; a discarded capture's; the loop's chain graph once "
       "instantiated)"},
      {"cudaGraphExecDestroy",
       phases(phase::instantiate, phase::loop, phase::reset, phase::teardown),
       "teardown never throws: a failed destroy leaks its one executable (instantiate() again "
       "replaces it; the loop replaces its unrolled one after a recapture)"},
      {"cudaStreamDestroy", phases(phase::teardown),
       "teardown never throws: the pool's own stream, destroyed with the pool"},
      {"cudaFreeAsync", phases(phase::discard, phase::reset, phase::teardown),
       "a slab whose stream-ordered free fails is freed with cudaFree"},
      {"cudaGetDevice", phases(phase::capture, phase::handover, phase::reset, phase::teardown),
       "the device a pool notes with its first slab, and the current one a wait for the device "
       "would switch back to: the current one where the query fails"},
      {"cudaThreadExchangeStreamCaptureMode",
       phases(phase::capture, phase::discard, phase::instantiate, phase::lazy_replay, phase::loop,
              phase::reset, phase::teardown, phase::handover),
       "the relaxed capture-mode guard around graphcap's own capture-unsafe calls (slabs, "
       "instantiation, destruction): if the exchange fails, the call runs in the thread's mode"},
      {"cudaStreamIsCapturing", phases(phase::discard),
       "discarding a capture asks whether the stream still captures; if CUDA cannot answer, it "
       "ends the capture anyway"},
      {"cudaStreamEndCapture", phases(phase::discard),
       "a discard ends the capture and asks again until the stream no longer captures"},
      {"cudaGraphLaunch", phases(phase::lazy_replay),
       "replay() of a kept template passes the null executable first; CUDA refuses it, and "
       "graphcap instantiates and launches"},
      {"cudaGetLastError",
       phases(phase::discard, phase::lazy_replay, phase::reset, phase::teardown),
       "clearing the last error after a failure graphcap handles: a discard, the refused lazy "
       "launch, teardown and wait calls that may have failed"},
      {"cuPointerGetAttribute", phases(phase::replay, phase::lazy_replay, phase::loop),
       "liveness::check: a buffer-id query before a replay that fails once is asked again by "
       "the diagnosis, which finds the input alive (at capture end it must surface)"},
  };
  if constexpr (malloced_slabs<Graph>()) {
    rules.push_back({"cudaFree", phases(phase::discard, phase::reset, phase::teardown),
                     "slabs from cudaMalloc go back with cudaFree (which waits for the device); "
                     "a failed cudaFree leaks its slab (teardown never throws)"});
  }
  if constexpr (pool::has_handle && pool::can_allocate) {
    // A give-back that hands blocks on or frees slabs by a free that does not wait, and pool()
    // of a replayed graph, wait for the device (detail::pool::slab_memory::wait_for_device):
    // no graph carries a completion marker (#48).
    rules.push_back({"cudaMalloc", phases(phase::handover, phase::reset, phase::teardown),
                     "the wait for the device allocates a probe slab: if none can be made, "
                     "cudaDeviceSynchronize waits instead"});
    rules.push_back({"cudaFree", phases(phase::handover, phase::reset, phase::teardown),
                     "that probe slab's free"});
    rules.push_back({"cudaDeviceSynchronize",
                     phases(phase::handover, phase::reset, phase::teardown),
                     "the wait without a probe slab: a failure leaves a device in error or a "
                     "capture elsewhere, nothing better to wait with"});
  }
  if constexpr (gc::detail::pool::nvtx_regions::enabled) {
    rules.push_back({"cudaStreamSynchronize", phases(phase::discard, phase::reset, phase::teardown),
                     "with the NVTX regions, slabs go back with cudaFree after a synchronize of "
                     "the pool's stream: a failed synchronize still frees"});
  }
  for (gcsweep::absorption& rule : gcsweep::policy_absorptions<Graph>::rules()) {
    rules.push_back(rule);
  }
  return rules;
}

/// The error type a failure of `function` must give.
template <class Graph>
std::string_view expected_type(std::string_view function) {
  // Beginning or ending the capture.
  if (function == "cudaStreamBeginCapture" || function == "cudaStreamEndCapture") {
    return "capture_error";
  }
  constexpr bool slab_pool = Graph::pool_type::has_handle && Graph::pool_type::can_allocate;
  if (slab_pool && (function == "cudaMallocAsync" || function == "cudaMallocFromPoolAsync")) {
    return "out_of_memory_error"; // growing the pool
  }
  if (malloced_slabs<Graph>() && function == "cudaMalloc") {
    return "out_of_memory_error";
  }
  return "cuda_error";
}

/// Checks the typed error a failure of `function` gave.
template <class Graph>
void check_error(std::string_view function, const gcsweep::outcome& failed) {
  if (function == "cudaThreadExchangeStreamCaptureMode") {
    // The guarded call then ran in the thread's own mode: under a global capture, a
    // capture-unsafe call fails (and invalidates the capture). A typed error is all to ask.
    CHECK(!failed.type.empty());
    return;
  }
  if (std::is_same_v<typename Graph::pool_type, gc::pool::graph_memory_nodes> &&
      function == "cudaGraphExecDestroy") {
    // The executable that could not be destroyed keeps the template's one instantiation
    // (a graph with memory nodes allows one): instantiating again is refused.
    CHECK(failed.code == cudaErrorNotSupported);
    CHECK(failed.call == "cudaGraphInstantiateWithFlags");
    return;
  }
  CHECK(failed.type == expected_type<Graph>(function));
  CHECK(failed.code == gcsweep::injected);
  CHECK(failed.call.rfind(function, 0) == 0); // the error names the call that failed
}

} // namespace flat_sweep
