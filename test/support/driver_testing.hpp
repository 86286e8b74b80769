// test/support/driver_testing.hpp - makes graphcap look its driver functions up again, for
// tests that change which functions the test double's driver provides. graphcap resolves each
// function once per process and never forgets one; this is the friend its driver table names
// for the tests (include/graphcap/cuda/detail/driver.hpp).
#pragma once

#include <graphcap/cuda/detail/driver.hpp>

#include <atomic>

namespace graphcap::detail {

struct driver_testing {
  template <class Function, unsigned int Version>
  static void forget(const driver_function<Function, Version>& function) noexcept {
    function.resolved_.store(nullptr, std::memory_order_release);
  }

  /// Every function of the table: a member added to driver_api and not here fails the size check.
  static void forget_all() noexcept {
    const driver_api& table = driver();
    forget(table.pointer_get_attribute);
    forget(table.graph_kernel_node_get_params);
    forget(table.func_get_param_info);
    forget(table.func_get_name);
    forget(table.kernel_get_function);
    forget(table.graph_node_get_type);
    forget(table.stream_get_capture_info);
    forget(table.graph_node_get_dependent_nodes);
    forget(table.graph_get_root_nodes);
    forget(table.graph_get_nodes);
    forget(table.graph_kernel_node_set_params);
    forget(table.graph_exec_kernel_node_set_params);
    static_assert(sizeof(driver_api) == 12 * sizeof(table.graph_get_nodes),
                  "a driver function was added to driver_api: forget it here too");
  }
};

} // namespace graphcap::detail

namespace gctest {

/// graphcap's next use of each driver function looks it up again.
inline void forget_resolved_driver_functions() noexcept {
  graphcap::detail::driver_testing::forget_all();
}

} // namespace gctest
