// test/support/step_sweep.hpp - the fault sweep of a scenario made of steps that must each be
// retryable (test/pool/sleepable_fault_sweep.double.cpp, test/piecewise/, test/rebind/,
// test/families/): every CUDA and driver call of a clean run fails once in turn (the loop of
// test/support/fault_sweep.hpp), and separately the user's exception is thrown at each point the
// scenario's user code marks with user_point(). Whatever failed:
//  - the step that saw it throws a typed graphcap error (naming the call where it carries the
//    injected status), the test's own call's exception, or the user's exception; or nothing,
//    where an absorption rule names the function for the step it fell in;
//  - the scenario's check of that step's failure holds (it says what the step must have left:
//    nothing changed, or the documented partial state);
//  - the same step, run again now that the fault is gone, succeeds, and so does the rest of the
//    scenario, with its checks of what it computed;
//  - no stream is left capturing, CUDA's last error is clear, and once the scenario is destroyed
//    the double holds nothing but what the scenario's leftovers allow.
//
// A scenario is a class S with: S() (its fixtures, made before the sweep window),
// `static constexpr std::size_t steps`, `gcsweep::phase where(std::size_t step) const`,
// `void run(std::size_t step)`, `void failed(std::size_t step, const gcsweep::outcome&)` (the
// check after a failed step, before it is run again), `std::vector<gcsweep::absorption>
// absorptions() const` and `gcsweep::allowed_leftovers leftovers(const gcsweep::call&) const`.
#pragma once

#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "double_helpers.hpp"
#include "fault_sweep.hpp"

#include <cuda_double/control.hpp>

#include <cstddef>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace step_sweep {

/// The user-code points of a run: the armed one throws the user's exception (once).
struct user_points {
  std::size_t passed = 0;
  std::size_t armed = 0; // 0: none
};
inline user_points& points() noexcept {
  static user_points state;
  return state;
}
/// Marks a point of the scenario's user code: the armed one throws gcsweep::user_exception.
inline void user_point() {
  user_points& state = points();
  if (++state.passed == state.armed) {
    state.armed = 0;
    throw gcsweep::user_exception{};
  }
}

/// The steps in which each function's failure was absorbed, over a sweep (its rules must all be
/// used: each says what the sweep found, no more).
inline std::map<std::string, gcsweep::phase_set>& absorbed() noexcept {
  static std::map<std::string, gcsweep::phase_set> used;
  return used;
}

/// What a case injects: a call that fails, or the user's exception at a point (1-based).
struct injection {
  gcsweep::call failing; // function empty: none
  std::size_t throw_at = 0;
};

/// One case (see the top of this file); returns how many user points the run passed.
template <class Scenario>
std::size_t one_case(const char* name, const injection& inject) {
  using kind = gcsweep::outcome::kind;
  const std::string& function = inject.failing.function;
  cuda_double::reset();
  std::optional<gcsweep::allowed_leftovers> allowed;
  std::size_t passed = 0;
  {
    Scenario scenario;
    points() = {0, inject.throw_at};
    if (!function.empty()) {
      cuda_double::fail_call(function.c_str(), gcsweep::injected,
                             static_cast<int>(inject.failing.nth));
    }
    bool any_failed = false;
    for (std::size_t step = 0; step < Scenario::steps; ++step) {
      gcsweep::step(scenario.where(step));
      const gcsweep::outcome result = gcsweep::attempt([&] { scenario.run(step); });
      if (result.what == kind::success) {
        continue;
      }
      any_failed = true;
      INFO("step " << step << " (" << gcsweep::name(scenario.where(step))
                   << ") failed: " << result.type << " " << result.message);
      gcsweep::print(name, inject.failing, result);
      switch (result.what) {
      case kind::success:
        break;
      case kind::user_exception:
        CHECK(inject.throw_at != 0);
        break;
      case kind::graphcap_error:
        if (result.code == gcsweep::injected && !result.call.empty() && !function.empty()) {
          CHECK(result.call.rfind(function, 0) == 0); // the error names the call that failed
        }
        CHECK(!function.empty());
        break;
      case kind::own_failure:
        CHECK(!function.empty());
        break;
      case kind::broken:
      case kind::other:
        FAIL_CHECK("an untyped exception, or a broken scenario: " << result.message);
        break;
      }
      static_cast<void>(cudaGetLastError()); // a test's own failed call leaves its error
      gctest::require_no_last_error();
      scenario.failed(step, result);
      const gcsweep::outcome again = gcsweep::attempt([&] { scenario.run(step); });
      INFO("run again: " << again.type << " " << again.message);
      CHECK(again.what == kind::success); // retryable once the fault is gone
    }
    if (!any_failed && !function.empty()) {
      INFO(function << " #" << inject.failing.nth << " failed in step "
                    << gcsweep::name(inject.failing.where) << " and no step saw it");
      const std::vector<gcsweep::absorption> rules = scenario.absorptions();
      CHECK(gcsweep::absorbed_by(rules, function, inject.failing.where) != nullptr);
      absorbed()[function] |= gcsweep::phases(inject.failing.where);
    }
    if (inject.throw_at != 0) {
      CHECK(any_failed); // the armed point was reached
    }
    gctest::require_no_last_error();
    CHECK(cuda_double::violations().empty());
    allowed = scenario.leftovers(inject.failing);
    passed = points().passed;
    points() = {};
  }
  gcsweep::check_nothing_left(function, *allowed);
  return passed;
}

/// How many cases a sweep ran.
struct counts {
  std::size_t injections = 0;
  std::size_t throws = 0;
};

/// Every call of a clean run failing once, then the user's exception at each point.
template <class Scenario>
counts sweep(const char* name) {
  counts done;
  std::size_t user_points_in_run = 0;
  const auto record = [&] {
    cuda_double::reset();
    Scenario scenario;
    points() = {};
    gcsweep::recorder recorder;
    for (std::size_t step = 0; step < Scenario::steps; ++step) {
      gcsweep::step(scenario.where(step));
      const gcsweep::outcome clean = gcsweep::attempt([&] { scenario.run(step); });
      INFO("clean run, step " << step << ": " << clean.message);
      REQUIRE(clean.what == gcsweep::outcome::kind::success);
    }
    user_points_in_run = points().passed;
    gcsweep::recording recording = recorder.finish();
    points() = {};
    return recording;
  };
  done.injections = gcsweep::sweep_calls(record, [&](const gcsweep::call& failing) {
    one_case<Scenario>(name, {failing, 0});
  });
  for (std::size_t at = 1; at <= user_points_in_run; ++at) {
    INFO("the user's exception at point " << at << " of " << user_points_in_run);
    one_case<Scenario>(name, {{}, at});
    ++done.throws;
  }
  cuda_double::reset();
  {
    const Scenario scenario;
    for (const gcsweep::absorption& rule : scenario.absorptions()) {
      const gcsweep::phase_set unused = rule.where & ~absorbed()[std::string{rule.function}];
      std::string steps;
      for (unsigned where = 0; where < 16; ++where) {
        if ((unused & (gcsweep::phase_set{1} << where)) != 0) {
          steps += std::string{" "} + gcsweep::name(static_cast<gcsweep::phase>(where));
        }
      }
      INFO("the rule for " << rule.function << " names steps where no failure was absorbed:"
                           << steps << ": narrow it");
      CHECK(unused == 0);
    }
  }
  absorbed().clear();
  cuda_double::reset();
  std::printf("%s fault sweep: %zu injected failures, %zu user exceptions\n", name, done.injections,
              done.throws);
  return done;
}

} // namespace step_sweep
