// test/support/fault_sweep.hpp - what the fault sweeps share (test/*/*fault_sweep.double.cpp):
// the loop that makes each CUDA call of a clean run fail once in turn, the phases (scenario
// steps) those calls fell in, the failures absorbed by design (each for the phases its reason
// covers), the outcome of a case and the check that nothing was left in the double.
//
// A scenario names its steps with gcsweep::step(phase) before each. The clean run records the
// call counts at every step, so that each (function, nth) of the sweep knows the step it fell in;
// a failure that no error reports is accepted only where an absorption rule names that function
// for that phase.
#pragma once

#include "cuda_helpers.hpp"
#include "double_helpers.hpp"

#include <graphcap/error.hpp>

#include <cuda_double/control.hpp>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gcsweep {

/// The failure injected: graphcap gives cudaErrorUnknown no special meaning.
inline constexpr cudaError_t injected = cudaErrorUnknown;

/// The exception a scenario's user code throws on purpose.
struct user_exception {};
/// A scenario read wrong data back, or found a stream still capturing.
struct scenario_broken : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- phases --------------------------------------------------------------------------------

/// The step of a scenario a call falls in.
enum class phase : unsigned char {
  setup,       ///< before the first step (nothing of graphcap's is swept here)
  capture,     ///< a capture that ends, bodies included
  capture_end, ///< the outermost capture's end, once the work returned (where a sweep marks it)
  discard,     ///< a capture abandoned: its scope destroyed, or the work threw
  instantiate, ///< an explicit instantiate()
  upload,      ///< upload()
  replay,      ///< replay() of an instantiated graph
  lazy_replay, ///< the first replay() of a kept template, which instantiates it
  loop,        ///< replay_loop::replay(): building the unrolled executable, launching it
  reset,       ///< reset(): the executable, the template and the pool's blocks go
  teardown,    ///< a graph destroyed (replaced by a new one)
  handover,    ///< pool(): a graph's pool made shareable, for a second graph to draw from
  sleep,       ///< sleepable_pool_handle::sleep()
  wake,        ///< sleepable_pool_handle::wake()
  rebind,      ///< a rebinder's construction, rebind() or rescan()
  select,      ///< a graph_family's switch to another key (replay_at_least)
};

[[nodiscard]] inline const char* name(phase where) noexcept {
  constexpr std::array<const char*, 16> names{
      "setup",  "capture",     "capture end", "discard", "instantiate", "upload",
      "replay", "lazy replay", "loop",        "reset",   "teardown",    "handover",
      "sleep",  "wake",        "rebind",      "select"};
  return names.at(static_cast<std::size_t>(where));
}

/// A set of phases, as a bit mask.
using phase_set = unsigned;
template <class... Phases>
[[nodiscard]] constexpr phase_set phases(Phases... where) noexcept {
  return ((phase_set{1} << static_cast<unsigned>(where)) | ...);
}

/// The call counts at the start of each step of one run.
class phase_log {
public:
  void enter(phase where) { steps_.push_back({where, cuda_double::call_counts()}); }

  /// The step the nth call of `function` (counting from the log's start) fell in.
  [[nodiscard]] phase of(const std::string& function, std::size_t nth) const {
    phase found = phase::setup;
    for (const step_start& start : steps_) {
      if (before(start, function) >= nth) {
        break;
      }
      found = start.where;
    }
    return found;
  }

  friend bool operator==(const phase_log&, const phase_log&) = default;

private:
  struct step_start {
    phase where;
    std::map<std::string, std::size_t> calls; // made before the step began
    friend bool operator==(const step_start&, const step_start&) = default;
  };
  static std::size_t before(const step_start& start, const std::string& function) {
    const auto found = start.calls.find(function);
    return found == start.calls.end() ? 0 : found->second;
  }
  std::vector<step_start> steps_;
};

/// The log of the run being recorded (none while failures are injected).
inline phase_log*& active_log() noexcept {
  static phase_log* log = nullptr;
  return log;
}

/// Scenarios call this before each step.
inline void step(phase where) {
  if (phase_log* log = active_log()) {
    log->enter(where);
  }
}

/// What a clean run called, and in which steps.
struct recording {
  std::map<std::string, std::size_t> calls;
  phase_log phases;
  friend bool operator==(const recording&, const recording&) = default;
};

/// Records a clean run from its construction (call counts cleared) to finish().
class recorder {
public:
  recorder() {
    cuda_double::clear_call_counts();
    active_log() = &log_;
  }
  recorder(const recorder&) = delete;
  recorder& operator=(const recorder&) = delete;
  ~recorder() { active_log() = nullptr; }
  [[nodiscard]] recording finish() {
    active_log() = nullptr;
    return {cuda_double::call_counts(), log_};
  }

private:
  phase_log log_;
};

// ---- absorbed failures ---------------------------------------------------------------------

/// A function whose failure graphcap absorbs by design in `where` (no error surfaces), and why.
struct absorption {
  std::string_view function;
  phase_set where;
  std::string_view reason;
};

/// What a policy adds to a sweep (the sweep of annot::on specializes it): its absorptions, and
/// a check after each case, once the graph captured and replayed again.
template <class Graph>
struct policy_absorptions {
  static std::vector<absorption> rules() { return {}; }
  static void check_case() {}
};

/// Absorbed in every sweep, in every phase: a pool's reading of the device's free memory around
/// a slab's growth (pool/detail/slab_memory.hpp, free_figure), a measure whose failure counts the
/// slab's own size and clears its error.
inline constexpr absorption free_memory_measure{
    "cudaMemGetInfo", ~phase_set{0},
    "a measure of the device's free memory around a slab's growth: a failed reading counts the "
    "slab's size (pool_statistics::device_bytes)"};

/// The rule that absorbs a failure of `function` in `where`, or null.
[[nodiscard]] inline const absorption* absorbed_by(std::span<const absorption> rules,
                                                   std::string_view function, phase where) {
  if (function == free_memory_measure.function) {
    return &free_memory_measure;
  }
  for (const absorption& rule : rules) {
    if (rule.function == function && (rule.where & phases(where)) != 0) {
      return &rule;
    }
  }
  return nullptr;
}

// ---- one case ------------------------------------------------------------------------------

/// One call of a clean run, made to fail.
struct call {
  std::string function;
  std::size_t nth = 0;   // which call of `function` (1 = its first in the run)
  std::size_t count = 0; // how many calls of `function` the run makes
  phase where = phase::setup;
};

/// How a case ended.
struct outcome {
  enum class kind { success, graphcap_error, user_exception, own_failure, broken, other };
  kind what = kind::success;
  std::string type;    // the graphcap error's type
  std::string message; // what() of whatever was thrown
  cudaError_t code = cudaSuccess;
  std::string call; // the call a cuda_error names
};

/// Runs `work` and classifies what it threw.
template <class Work>
outcome attempt(Work&& work) {
  outcome result;
  const auto graphcap_error = [&](const char* type, const graphcap::error& failure) {
    result.what = outcome::kind::graphcap_error;
    result.type = type;
    result.message = failure.what();
    if (const auto* cuda = dynamic_cast<const graphcap::cuda_error*>(&failure)) {
      result.code = cuda->code();
      result.call = cuda->call();
    }
  };
  try {
    std::forward<Work>(work)();
  } catch (const graphcap::liveness_error& failure) {
    graphcap_error("liveness_error", failure);
  } catch (const graphcap::state_error& failure) {
    graphcap_error("state_error", failure);
  } catch (const graphcap::out_of_memory_error& failure) {
    graphcap_error("out_of_memory_error", failure);
  } catch (const graphcap::capture_error& failure) {
    graphcap_error("capture_error", failure);
  } catch (const graphcap::cuda_error& failure) {
    graphcap_error("cuda_error", failure);
  } catch (const graphcap::error& failure) {
    graphcap_error("error", failure);
  } catch (const user_exception&) {
    result.what = outcome::kind::user_exception;
    result.message = "the user's exception";
  } catch (const gctest::own_call_failed& failure) {
    result.what = outcome::kind::own_failure;
    result.message = failure.what();
  } catch (const scenario_broken& failure) {
    result.what = outcome::kind::broken;
    result.message = failure.what();
  } catch (const std::exception& failure) {
    result.what = outcome::kind::other;
    result.message = failure.what();
  } catch (...) {
    result.what = outcome::kind::other;
    result.message = "an exception of unknown type";
  }
  return result;
}

/// GRAPHCAP_SWEEP_VERBOSE=1 prints every injection and its outcome (for docs/errors.md).
[[nodiscard]] inline bool verbose() {
  static const bool on = std::getenv("GRAPHCAP_SWEEP_VERBOSE") != nullptr;
  return on;
}

inline void print(std::string_view scenario, const call& failed, const outcome& result) {
  if (verbose()) {
    std::printf("%.*s | %s #%zu (%s) | %s | %s\n", static_cast<int>(scenario.size()),
                scenario.data(), failed.function.c_str(), failed.nth, name(failed.where),
                result.type.empty() ? "-" : result.type.c_str(), result.message.c_str());
  }
}

/// The calling thread's capture mode (exchanged and put back).
[[nodiscard]] inline cudaStreamCaptureMode thread_capture_mode() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDA_REQUIRE(cudaThreadExchangeStreamCaptureMode(&mode));
  cudaStreamCaptureMode back = mode;
  CUDA_REQUIRE(cudaThreadExchangeStreamCaptureMode(&back));
  return mode;
}

/// What graphcap may leave in the double after a case, besides the one object of a failed
/// destroy (which cannot be retried).
struct allowed_leftovers {
  std::size_t streams = 0;     // body streams kept in a dead capture (body_stream_lease::keep)
  std::size_t graphs = 0;      // graphs kept because CUDA destroyed one of their bodies
  bool malloced_slabs = false; // pool slabs from cudaMalloc: a failed cudaFree leaks one
  std::size_t allocations = 0; // leaked by a failed free that cannot throw (a VMM unmap, ...)
};

/// Once everything is destroyed: nothing left in the double but what `allowed` says.
inline void check_nothing_left(const std::string& function, const allowed_leftovers& allowed) {
  const gctest::live_objects left;
  const auto failed_destroy = [&](const char* destroy) { return function == destroy ? 1U : 0U; };
  CHECK(left.streams <= allowed.streams + failed_destroy("cudaStreamDestroy"));
  CHECK(left.events <= failed_destroy("cudaEventDestroy"));
  CHECK(left.graphs <= allowed.graphs + failed_destroy("cudaGraphDestroy"));
  CHECK(left.execs <= failed_destroy("cudaGraphExecDestroy"));
  CHECK(left.allocations <=
        allowed.allocations + (allowed.malloced_slabs ? failed_destroy("cudaFree") : 0U));
}

// ---- the loop ------------------------------------------------------------------------------

/// The sweep: `record()` returns a clean run's recording (on a fresh double); it runs a warm-up
/// first (process-wide first use happens there) and once more to check that the run is
/// deterministic, so that the n-th call is the same call in every case. Then `inject(call)` for
/// each call of each function of the clean run. Returns how many cases ran.
template <class Record, class Inject>
std::size_t sweep_calls(Record&& record, Inject&& inject) {
  static_cast<void>(record());
  const recording clean = record();
  CHECK(record() == clean);
  std::size_t cases = 0;
  for (const auto& [function, count] : clean.calls) {
    for (std::size_t nth = 1; nth <= count; ++nth) {
      const call failing{function, nth, count, clean.phases.of(function, nth)};
      INFO(function << " fails at its call " << nth << " of " << count << ", in step "
                    << name(failing.where));
      inject(failing);
      ++cases;
    }
  }
  return cases;
}

} // namespace gcsweep
