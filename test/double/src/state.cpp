// Global state, per-thread state and the control API.
#include "state.hpp"

#include <cuda_double/control.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace cuda_double::detail {

bool operator==(const cudaGraphEdgeData& a, const cudaGraphEdgeData& b) {
  return a.from_port == b.from_port && a.to_port == b.to_port && a.type == b.type;
}

State& state() {
  // Leaked on purpose: host code may still call CUDA from static
  // destructors, after a function-local static would have died.
  static State* s = new State;
  return *s;
}

ThreadState& thread_state() {
  thread_local ThreadState ts;
  const std::uint64_t gen = state().generation.load();
  if (ts.generation != gen) {
    const bool in_callback = ts.in_callback;
    ts = ThreadState{};
    ts.generation = gen;
    ts.in_callback = in_callback;
  }
  return ts;
}

bool take_fault(const char* name, cudaError_t& error) {
  auto it = state().faults.find(name);
  if (it == state().faults.end())
    return false;
  bool fired = false;
  auto& list = it->second;
  for (auto f = list.begin(); f != list.end();) {
    if (--f->remaining == 0) {
      if (!fired)
        error = f->error;
      fired = true;
      f = list.erase(f);
    } else {
      ++f;
    }
  }
  return fired;
}

} // namespace cuda_double::detail

namespace cuda_double::detail {

std::atomic<bool>& violations_are_expected_flag() {
  static std::atomic<bool> expected{false};
  return expected;
}

namespace {

std::atomic<std::size_t> process_violations{0};

// A process in which the H200 would have crashed does not exit successfully, whatever its tests
// asserted (unless it provokes violations on purpose: expect_violations()).
void fail_exit_on_violations() {
  const std::size_t count = process_violations.load();
  if (count != 0 && !violations_are_expected_flag().load()) {
    std::fprintf(stderr, "cuda_double: %zu violation(s) in this process (see above): failing it\n",
                 count);
    std::fflush(nullptr); // _Exit skips stdio's flush: the process's own output comes first
    std::_Exit(1);
  }
}

} // namespace

void violation(std::string what) {
  if (state().resetting)
    return; // reset() tears everything down, kept graphs included
  static const bool registered = (std::atexit(fail_exit_on_violations), true);
  static_cast<void>(registered);
  process_violations.fetch_add(1);
  std::fprintf(stderr, "cuda_double: VIOLATION: %s\n", what.c_str());
  state().violations.push_back(std::move(what));
}

} // namespace cuda_double::detail

namespace cuda_double {

using namespace detail;

void reset() {
  State& st = state();
  std::lock_guard<std::recursive_mutex> lock(st.mu);
  st.resetting = true;
  end_all_captures();
  while (!st.execs.empty())
    destroy_exec(*st.execs.begin());
  while (!st.graphs.empty())
    destroy_graph(*st.graphs.begin());
  for (cudaEvent_t e : st.events)
    delete e;
  st.events.clear();
  for (cudaStream_t s : st.streams)
    delete s;
  st.streams.clear();
  st.legacy.clear();
  st.per_thread.clear();
  free_all_memory();
  st.cond_handles.clear();
  reset_kernel_runs(); // models stay: kernels are registered once per process
  st.calls.clear();
  st.faults.clear();
  st.violations.clear();
  st.resetting = false;
  st.hidden_driver_functions.clear();
  st.device_count = 1;
  st.no_driver = false;
  st.total_memory = kDefaultTotalMemory;
  st.mempool_reserve = 0;
  st.exec_bytes_per_kernel_node = 0;
  st.exec_bytes_per_other_node = 0;
  st.stream_bytes = 0;
  st.exec_caches.clear();
  st.vmm_out_of_memory_call = kDefaultVmmOutOfMemoryCall;
  ++st.generation;
}

std::vector<std::string> violations() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return state().violations;
}

void expect_violations() {
  detail::violations_are_expected_flag().store(true);
}

void clear_violations() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().violations.clear();
}

void set_device_count(int count) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().device_count = count < 0 ? 0 : count;
}

void set_device_memory(std::size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().total_memory = bytes;
}

void set_mempool_reserve(std::size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().mempool_reserve = bytes;
}

void set_executable_memory(std::size_t per_kernel_node, std::size_t per_other_node) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().exec_bytes_per_kernel_node = per_kernel_node;
  state().exec_bytes_per_other_node = per_other_node;
}

void set_stream_memory(std::size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().stream_bytes = bytes;
}

std::size_t executable_cache_bytes(int device) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  const auto found = state().exec_caches.find(device);
  return found == state().exec_caches.end() ? 0 : found->second.reserved;
}

std::size_t executable_cache_used(int device) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  const auto found = state().exec_caches.find(device);
  return found == state().exec_caches.end() ? 0 : found->second.used;
}

void set_vmm_out_of_memory_call(const char* function_name) {
  const std::string name = function_name != nullptr ? function_name : "";
  if (name != "cuMemCreate" && name != "cuMemMap" && name != "cuMemSetAccess") {
    throw std::invalid_argument("cuda_double::set_vmm_out_of_memory_call: \"" + name +
                                "\" is none of cuMemCreate, cuMemMap, cuMemSetAccess");
  }
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().vmm_out_of_memory_call = name;
}

void simulate_no_driver(bool on) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().no_driver = on;
}

void hide_driver_function(const char* symbol, bool older_driver) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().hidden_driver_functions[symbol] =
      older_driver ? cudaDriverEntryPointVersionNotSufficent : cudaDriverEntryPointSymbolNotFound;
}

void show_driver_functions() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().hidden_driver_functions.clear();
}

void fail_call(const char* function_name, cudaError_t error, int nth) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  if (nth < 1)
    nth = 1;
  state().faults[function_name].push_back(Fault{nth, error});
}

std::size_t live_streams() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return state().streams.size();
}

std::size_t live_events() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return state().events.size();
}

std::size_t live_graphs() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return state().graphs.size();
}

std::size_t live_execs() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return state().execs.size();
}

std::size_t live_allocations() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  std::size_t n = 0;
  for (const auto& [base, a] : state().allocations)
    n += a.mapped ? 1 : 0;
  return n + live_vmm_objects();
}

std::size_t calls(const char* function_name) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  auto it = state().calls.find(function_name);
  return it == state().calls.end() ? 0 : it->second;
}

std::map<std::string, std::size_t> call_counts() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return state().calls;
}

void clear_call_counts() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  state().calls.clear();
}

std::uint32_t graph_id(cudaGraph_t graph) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return live_graph_or_body(graph) ? graph->id : 0;
}

std::uint64_t node_id(cudaGraphNode_t node) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  if (!state().nodes.count(node))
    return 0;
  return (std::uint64_t{node->graph->id} << 32) | node->index;
}

} // namespace cuda_double
