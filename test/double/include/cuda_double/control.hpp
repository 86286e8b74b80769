// Control API of the CUDA runtime test double (graphcap_cuda_double).
//
// Tests link the double instead of libcudart; these functions let them reset
// it, shape its environment, inject failures and observe what was called.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cuda_double {

// Destroys every stream, event, graph, executable, capture, pool and
// allocation, clears call counts and injected faults, and restores the
// defaults (one device, driver present). Each thread's last error, current
// device and capture mode are reset too.
void reset();

// Number of devices the fake driver reports (default 1).
void set_device_count(int count);

// The device's memory (default 80 GiB): cudaMemGetInfo's total, and what device allocations,
// pool memory and VMM physical allocations may take together. Until reset().
void set_device_memory(std::size_t bytes);

// Stream-ordered pools' reserve (cudaMallocAsync, cudaMallocFromPoolAsync): a pool whose reserve
// has no room for an allocation reserves max(`bytes`, the allocation) more, counted by
// cudaMemGetInfo from then on, and later allocations draw on it; the reserve goes back at a
// trim (a synchronize, cudaMemPoolTrimTo) once no allocation of the pool is in use. An H100
// reserved 32 MiB for a 2 MiB slab (session 21, benchmark/probes/first_use_memory.cu). 0 (the
// default) until reset(): a pool reserves exactly its allocations.
void set_mempool_reserve(std::size_t bytes);

// Executables' device memory, modelled on the H200 (driver 580, benchmark/probes/
// executable_memory.cu): each instantiation takes `per_kernel_node` bytes per kernel node and
// `per_other_node` per node of another type (memset and empty nodes: 0) from a per-device cache
// that grows in 2 MiB pieces, each counted by cudaMemGetInfo from then on; destroying an
// executable gives its bytes back to the cache, not to cudaMemGetInfo (only reset() does, and a
// cudaMalloc the device cannot hold: the cache then keeps the pieces live executables use, as
// an H100 gave back 582 of 704 MiB so in session 19's executable_memory_release probe). An
// instantiation the device's memory cannot hold fails with cudaErrorMemoryAllocation. Both 0
// (the default) until reset(): executables take no memory.
void set_executable_memory(std::size_t per_kernel_node, std::size_t per_other_node = 0);
// Each stream created from now on takes `bytes` from its device's executable cache (above) while
// it lives: the driver's 2 MiB pieces, counted by cudaMemGetInfo once taken and kept when the
// stream is destroyed (64 streams took 26 MiB on an H200: benchmark/probes/budget_drop.cu).
// 0 (the default) until reset(): streams take no memory.
void set_stream_memory(std::size_t bytes);
// The bytes of `device`'s executable cache: taken in 2 MiB pieces (what cudaMemGetInfo counts),
// and used by live executables.
std::size_t executable_cache_bytes(int device = 0);
std::size_t executable_cache_used(int device = 0);

// The VMM call that finds the device out of memory for a new physical allocation, failing with
// CUDA_ERROR_OUT_OF_MEMORY and no side effect: "cuMemCreate" (the default, where CUDA documents
// it), "cuMemMap" or "cuMemSetAccess" (a driver that commits the memory later: which one a
// driver fails is its own; docs/errors.md). A physical allocation counts as device memory from
// cuMemCreate on whichever call checks (cudaMemGetInfo's free then reads 0 while the device is
// over). Other names: std::invalid_argument. Until reset().
void set_vmm_out_of_memory_call(const char* function_name);

// When on, every runtime call fails with cudaErrorInsufficientDriver, as on
// a machine without a GPU driver (cudaDriverGetVersion still succeeds with 0,
// cudaRuntimeGetVersion with 13000, and the last error stays set).
void simulate_no_driver(bool on);

// cudaGetDriverEntryPoint and cudaGetDriverEntryPointByVersion answer for the driver function
// `symbol` (e.g. "cuFuncGetName") as a driver without it would: found = false, and the query
// result cudaDriverEntryPointSymbolNotFound, or with `older_driver`
// cudaDriverEntryPointVersionNotSufficent (a driver older than the function). Until
// show_driver_functions() or reset(). A function already looked up stays callable: code that
// caches entry points must look them up again to see it missing.
void hide_driver_function(const char* symbol, bool older_driver = false);
// Undoes every hide_driver_function().
void show_driver_functions();

// The nth next call of `function_name` (counting from now) fails once with
// `error`, without side effects. Works for every runtime entry point of the
// double and for driver functions reached via cudaGetDriverEntryPoint (the
// error's numeric value is then returned as a CUresult).
void fail_call(const char* function_name, cudaError_t error, int nth = 1);

// Live objects, for leak checks.
std::size_t live_streams(); // created by the user, not destroyed
std::size_t live_events();
std::size_t live_graphs(); // includes graphs of ongoing captures
std::size_t live_execs();
// Device, pinned host and backed graph memory; VMM reservations, physical allocations
// (cuMemCreate'd, not yet released and unmapped) and mappings with access.
std::size_t live_allocations();

// How many times a function of the double was called since the last reset
// or clear_call_counts().
std::size_t calls(const char* function_name);
// Every function called since the last reset or clear_call_counts(), with its count: lets a
// test assert the exact set of calls a code path makes.
std::map<std::string, std::size_t> call_counts();
void clear_call_counts();

// Stable ids for a future CUPTI double: the graph's process-unique id, and
// (graph id << 32 | node creation index) for a node. Clones keep indices.
std::uint32_t graph_id(cudaGraph_t graph);
std::uint64_t node_id(cudaGraphNode_t node);

// Conditional nodes. No kernel runs on the double, so no device code can call
// cudaGraphSetConditional: these stand in for it. A handle has one value in the double, shared by
// the graph it was created on and every executable of it (CUDA keeps one per executable). Without
// cudaGraphCondAssignDefault a handle starts at 0 and its default is never applied (CUDA: the
// value is undefined; 0 on the H200). Handles and scripts are dropped by reset().
//
// Handles are numbered per graph, as on the H200 (1, 2, ... in each; a body's handles continue
// its root graph's numbers), so a value alone names a handle only while one graph has it. Each
// function therefore also takes the graph the handle was made on (or any graph of its tree: a
// body, the root) or an executable of it, where the value names one handle. They throw
// std::invalid_argument where several live graphs have a handle of that value (name the graph
// or the executable), for a graph or executable that is not live, and (set_conditional,
// script_conditional) for a handle the double does not know. What the double models, and what it
// guessed: docs/testing.md.
//
// Sets the handle's value now, as a kernel would.
void set_conditional(cudaGraphConditionalHandle handle, unsigned value);
void set_conditional(cudaGraph_t graph, cudaGraphConditionalHandle handle, unsigned value);
void set_conditional(cudaGraphExec_t exec, cudaGraphConditionalHandle handle, unsigned value);
// Each later evaluation of the handle by a conditional node (an If or Switch decision, each check
// of a While, the first included) first takes the next of `values` as the handle's value, while
// any remain. Replaces what is left of an earlier script.
void script_conditional(cudaGraphConditionalHandle handle, std::vector<unsigned> values);
void script_conditional(cudaGraph_t graph, cudaGraphConditionalHandle handle,
                        std::vector<unsigned> values);
void script_conditional(cudaGraphExec_t exec, cudaGraphConditionalHandle handle,
                        std::vector<unsigned> values);
// 0 for an unknown handle.
unsigned conditional_value(cudaGraphConditionalHandle handle);
unsigned conditional_value(cudaGraph_t graph, cudaGraphConditionalHandle handle);
unsigned conditional_value(cudaGraphExec_t exec, cudaGraphConditionalHandle handle);
// How many times conditional nodes evaluated the handle since it was created.
std::size_t conditional_evaluations(cudaGraphConditionalHandle handle);
std::size_t conditional_evaluations(cudaGraph_t graph, cudaGraphConditionalHandle handle);
std::size_t conditional_evaluations(cudaGraphExec_t exec, cudaGraphConditionalHandle handle);
// A While node that ran this many iterations in a row on a non-zero value that no script
// supplied would never stop (nothing else changes a value during a launch): its next check fails
// the launch with cudaErrorLaunchTimeout.
inline constexpr std::size_t endless_while_limit = 1'000'000;
// Body graphs of conditional nodes of user-visible graphs (not counted by live_graphs()).
std::size_t live_conditional_bodies();

// What the H200 does not survive, recorded where the double goes on (each also printed to
// stderr at once): a body graph destroyed by a failed end of its capture and then destroyed
// again with its node, a graph with such a body instantiated, a capture into a body ended (or
// its stream destroyed) after the body's parent graph was destroyed. Cleared by reset() and
// clear_violations(); a test that ends with any is wrong whatever it asserted, and a process
// that recorded any exits with status 1 (after its own output), unless expect_violations() said
// it provokes them on purpose (the double's own tests of these rules).
std::vector<std::string> violations();
void clear_violations();
void expect_violations();

// What an executable's node does now, for tests comparing two executables field by field (an
// executable switched by set-params against one updated by cudaGraphExecUpdate): one entry per
// node of the executable's own graph, in creation order. Kernel: the host stub (`function`), the
// shape, the dynamic shared memory, the argument bytes as laid out by the kernel's parameters and
// the launch attributes (id, then the value's bytes). Memset and memcpy: their parameters. Event
// record and wait: the event. Every
// node: its type and enable state (cudaGraphNodeSetEnabled). Nodes of child graphs and bodies are
// not listed. std::invalid_argument for an executable that is not live.
struct exec_node_fields {
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  bool enabled = true;
  const void* function = nullptr;
  dim3 grid{0, 0, 0}, block{0, 0, 0};
  unsigned shared_bytes = 0;
  std::vector<unsigned char> arguments;
  std::vector<unsigned char> attributes;
  cudaMemsetParams memset{};
  cudaMemcpy3DParms memcpy{};
  cudaEvent_t event = nullptr;
};
bool operator==(const exec_node_fields& a, const exec_node_fields& b);
std::vector<exec_node_fields> exec_nodes(cudaGraphExec_t exec);
// The first field in which `a` and `b` differ ("node 3 kernel arguments"), "" if none.
std::string exec_difference(const std::vector<exec_node_fields>& a,
                            const std::vector<exec_node_fields>& b);

} // namespace cuda_double
