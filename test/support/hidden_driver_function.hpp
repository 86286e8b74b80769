// test/support/hidden_driver_function.hpp - a driver function missing for one scope, as on a
// driver that lacks it: the test double's entry-point lookup reports it missing, and graphcap
// forgets the functions it resolved, so that its next use looks them up again.
#pragma once

#include "driver_testing.hpp"

#include <cuda_double/control.hpp>

namespace gctest {

/// Hides `symbol` (with `older_driver`, as a driver older than the function) for the object's
/// life; destruction shows every hidden function again.
class hidden_driver_function {
public:
  explicit hidden_driver_function(const char* symbol, bool older_driver = false) {
    cuda_double::hide_driver_function(symbol, older_driver);
    forget_resolved_driver_functions();
  }
  ~hidden_driver_function() {
    cuda_double::show_driver_functions();
    forget_resolved_driver_functions();
  }
  hidden_driver_function(const hidden_driver_function&) = delete;
  hidden_driver_function& operator=(const hidden_driver_function&) = delete;
  hidden_driver_function(hidden_driver_function&&) = delete;
  hidden_driver_function& operator=(hidden_driver_function&&) = delete;
};

} // namespace gctest
