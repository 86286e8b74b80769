// Internal state of the CUDA runtime test double. Not part of the public API.
//
// The double models one process-wide CUDA runtime: handles are pointers to the
// structs defined here (the CUDA headers only forward-declare them), all state
// lives behind one global mutex, and eager (non-captured) work runs on the
// calling thread at once, so every stream is always idle.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

namespace cuda_double::detail {

struct Capture;
struct Conditional;
struct Kernel;

// An edge as the runtime stores it: the node it comes from plus its data.
struct Edge {
  CUgraphNode_st* from;
  cudaGraphEdgeData data;
};

bool operator==(const cudaGraphEdgeData& a, const cudaGraphEdgeData& b);

// A condition handle as a graph lists it: the value the user sees, numbered per graph as on the
// H200, and the key of the double's record (State::cond_handles), unique in the process.
struct HandleRef {
  cudaGraphConditionalHandle value = 0;
  unsigned long long key = 0;
};

// A kernel launch's copied arguments and shape: the payload of a kernel node (kernel.cpp).
// Copies (clones, executables) copy the arguments; `params` points into the node's own storage.
struct KernelCall {
  Kernel* kernel = nullptr;
  dim3 grid{}, block{};
  unsigned shared_bytes = 0;
  std::vector<std::max_align_t> storage;
  std::vector<void*> params;
  // The launch attributes given to cudaLaunchKernelEx or set on the node (cluster shape,
  // cooperative, priority, ...), one per id, in the order they were first given.
  std::vector<cudaLaunchAttribute> attributes;

  KernelCall();
  KernelCall(const KernelCall& other);
  KernelCall& operator=(const KernelCall& other);
  ~KernelCall();
};

} // namespace cuda_double::detail

// The handles CUDA gives a kernel: one of each per registered host stub.
struct CUfunc_st {
  cuda_double::detail::Kernel* kernel = nullptr;
};
struct CUkern_st {
  cuda_double::detail::Kernel* kernel = nullptr;
};

struct CUstream_st {
  enum class Kind { user, legacy, per_thread };
  Kind kind = Kind::user;
  unsigned flags = 0;
  int priority = 0;
  int device = 0;
  unsigned long long id = 0;
  std::size_t cache_bytes = 0; // of its device's executable cache (set_stream_memory)
  // Capture membership: the sequence this stream takes part in, and the
  // stream's capture frontier (the dependencies of the next captured node).
  cuda_double::detail::Capture* capture = nullptr;
  std::vector<CUgraphNode_st*> frontier;
  std::vector<cudaGraphEdgeData> frontier_edges; // parallel to frontier

  // The per-thread default stream synchronizes with the legacy stream like
  // any stream created without cudaStreamNonBlocking.
  bool blocking() const { return kind != Kind::user || (flags & cudaStreamNonBlocking) == 0; }
};

struct CUevent_st {
  enum class State { never, recorded, captured };
  unsigned flags = 0;
  int device = 0;
  State state = State::never;
  std::chrono::steady_clock::time_point stamp{};
  // Valid while state == captured: the capture it was recorded in and the
  // recording stream's frontier at that moment.
  unsigned long long capture_id = 0;
  std::vector<CUgraphNode_st*> nodes;
};

struct CUgraph_st {
  std::uint32_t id = 0;
  std::uint32_t next_index = 0;
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes; // creation order
  // Live executables instantiated from this graph while it holds memory
  // allocation nodes: CUDA allows one at a time. Shared so that an exec
  // outliving its graph can still release its slot.
  std::shared_ptr<int> alloc_execs = std::make_shared<int>(0);
  // cudaGraphClone bookkeeping for cudaGraphNodeFindInClone.
  const CUgraph_st* cloned_from = nullptr;
  // The source's id: unlike its address, never reused by a later graph.
  std::uint32_t cloned_from_id = 0;
  std::map<const CUgraphNode_st*, CUgraphNode_st*> clone_of;
  bool user_visible = true; // false for exec snapshots and child graphs
  // Conditional bodies (conditional.cpp): the node owning this body graph, and the handles
  // created on this graph (copied by clones, so that snapshots know which defaults to apply).
  CUgraphNode_st* owner = nullptr;
  std::vector<cuda_double::detail::HandleRef> handles;
  // The next handle value, used on a root graph only: its bodies draw from it too, so that a
  // value names one handle in a whole executable (device code sets a condition by value alone).
  cudaGraphConditionalHandle next_handle = 1;
  // A body whose capture failed to end: CUDA destroys the graph a capture was into when its end
  // fails, a body too (benchmark/probes/body_abandon.cu); its node then holds a freed body.
  bool destroyed_by_capture = false;
};

struct CUgraphNode_st {
  CUgraph_st* graph = nullptr;
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  std::uint32_t index = 0;                     // per-graph creation index (kept by clones)
  std::vector<cuda_double::detail::Edge> deps; // incoming edges
  // Payload, by type.
  cudaHostNodeParams host{};
  cudaMemsetParams memset{};
  cudaMemcpy3DParms memcpy{};
  cudaEvent_t event = nullptr;
  cudaMemAllocNodeParams alloc{}; // alloc.dptr is the reserved address
  void* free_ptr = nullptr;
  std::unique_ptr<CUgraph_st> child;
  std::unique_ptr<cuda_double::detail::Conditional> cond;
  std::unique_ptr<cuda_double::detail::KernelCall> kernel;
  // An executable's node turned off by cudaGraphNodeSetEnabled: its launches skip it.
  bool disabled = false;
};

struct CUgraphExec_st {
  unsigned long long id = 0;
  unsigned long long flags = 0;
  std::unique_ptr<CUgraph_st> graph;  // snapshot taken at instantiation
  std::vector<CUgraphNode_st*> order; // topological launch order
  std::shared_ptr<int> alloc_slot;    // set when holding the one-exec slot
  std::size_t cache_bytes = 0;        // what it takes of its device's executable cache
  int cache_device = 0;               // the device current at its instantiation
};

struct CUmemPoolHandle_st {
  int device = 0;
  bool is_default = false;
  bool destroyed = false; // destroyed by the user, freed once unused
  cudaMemPoolProps props{};
  unsigned long long release_threshold = 0;
  unsigned long long used = 0, used_high = 0, reserved = 0, reserved_high = 0;
  int reuse_follow_event = 1, reuse_opportunistic = 1, reuse_internal = 1;
  std::multimap<std::size_t, void*> cache; // freed blocks kept for reuse
  unsigned long long slack = 0;            // reserved, in no block (set_mempool_reserve)
};

namespace cuda_double::detail {

inline constexpr std::size_t kAlignment = 256;
inline constexpr int kRuntimeVersion = 13000;
inline constexpr int kDriverVersion = 13000;

struct Capture {
  unsigned long long id = 0;
  cudaGraph_t graph = nullptr;
  bool owns_graph = true; // false for cudaStreamBeginCaptureToGraph
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  cudaStream_t origin = nullptr;
  bool invalidated = false;
  // The graph it captured into (a body) was destroyed with its parent while the capture ran:
  // CUDA crashes if such a capture is ended or its stream destroyed (probe cases J, M3, M4).
  bool orphaned = false;
  std::vector<cudaStream_t> streams; // origin first, then joined streams
};

// A conditional node's payload. Its body graphs belong to the node; those of a user-visible
// graph are listed in State::bodies (queryable, capturable, never destroyable by the user).
struct Conditional {
  cudaGraphConditionalHandle handle = 0;
  unsigned long long key = 0; // its record in State::cond_handles
  cudaGraphConditionalNodeType type = cudaGraphCondTypeIf;
  std::vector<std::unique_ptr<CUgraph_st>> bodies;
  std::vector<cudaGraph_t> body_array; // what phGraph_out points at: valid while the node lives
};

// A handle made by cudaGraphConditionalHandleCreate. The double keeps one value per handle,
// shared by the graph, its executable and any copy of it.
struct ConditionalHandle {
  cudaGraphConditionalHandle number = 0; // the handle's value, as its graph numbered it
  std::size_t refs = 0;                  // graphs listing it (a graph, its snapshots): freed at 0
  const CUgraphNode_st* node = nullptr;  // the one node of its graph using it, if any
  unsigned default_value = 0;
  unsigned flags = 0;
  unsigned value = 0;
  std::deque<unsigned> script; // values taken by the next evaluations (script_conditional)
  std::size_t evaluations = 0;
};

struct Allocation {
  // vmm: a mapping of a physical allocation into a reserved range (vmm.cpp); its memory is the
  // physical allocation's, counted there.
  enum class Kind { device, pinned, graph, vmm };
  void* base = nullptr;
  std::size_t size = 0;     // requested size
  std::size_t capacity = 0; // rounded size of the host block backing it
  Kind kind = Kind::device;
  int device = 0;
  CUmemPoolHandle_st* pool = nullptr; // stream-ordered allocations
  unsigned long long buffer_id = 0;
  // Graph allocations: the address is reserved while any alloc node refers
  // to it and is backed ("mapped") between its alloc and free.
  bool mapped = true;
  int graph_refs = 0;
};

// Virtual memory management (vmm.cpp). A reservation is host address space (mmap, no access);
// a physical allocation (cuMemCreate) holds its contents while unmapped; a mapping makes a
// physical allocation's pages the reservation's, accessible once cuMemSetAccess allows it.
struct VmmReservation {
  std::size_t size = 0;
};
struct VmmPhysical {
  std::size_t size = 0;
  int device = 0;
  std::vector<unsigned char> contents; // while unmapped; empty: never written (undefined)
  int mappings = 0;
  bool released = false; // cuMemRelease called: gone with its last mapping
  // Passed the check for device memory at State::vmm_out_of_memory_call (counted as device
  // memory from cuMemCreate on all the same).
  bool memory_checked = false;
};
struct VmmMapping {
  std::size_t size = 0;
  std::size_t offset = 0; // into the physical allocation
  unsigned long long handle = 0;
  bool accessible = false;
};

struct Fault {
  int remaining;
  cudaError_t error;
};

inline constexpr std::size_t kDefaultTotalMemory = std::size_t{80} << 30;
// Where CUDA documents CUDA_ERROR_OUT_OF_MEMORY (set_vmm_out_of_memory_call: another driver's).
inline constexpr const char* kDefaultVmmOutOfMemoryCall = "cuMemCreate";

struct State {
  // Recursive so that host functions run under it may use the control API.
  std::recursive_mutex mu;
  std::atomic<std::uint64_t> generation{1};
  int device_count = 1;
  bool no_driver = false;
  std::size_t total_memory = kDefaultTotalMemory;
  // The VMM call that finds the device out of memory for a new physical allocation
  // (set_vmm_out_of_memory_call).
  std::string vmm_out_of_memory_call = kDefaultVmmOutOfMemoryCall;

  std::unordered_set<cudaStream_t> streams;           // user streams
  std::map<int, std::unique_ptr<CUstream_st>> legacy; // per device
  std::map<std::pair<std::thread::id, int>, std::unique_ptr<CUstream_st>> per_thread;
  std::unordered_set<cudaEvent_t> events;
  std::unordered_set<cudaGraph_t> graphs;    // user-visible graphs
  std::unordered_set<cudaGraph_t> bodies;    // conditional bodies of user-visible graphs
  std::vector<std::string> violations;       // what the H200 would not survive
  bool resetting = false;                    // in reset(): no violations recorded
  std::unordered_set<cudaGraphNode_t> nodes; // nodes of user-visible graphs and their bodies
  std::unordered_set<cudaGraphExec_t> execs;
  std::map<unsigned long long, std::unique_ptr<Capture>> captures;
  std::map<std::uintptr_t, Allocation> allocations;
  // Blocks freed by cudaFree, kept for the next cudaMalloc of the same rounded size (newest
  // first): like CUDA's driver, the double hands a freed address out again, so that tests can
  // rely on address reuse (with a new buffer id). Not counted as memory in use.
  std::multimap<std::size_t, void*> freed_device_blocks;
  std::map<std::uintptr_t, VmmReservation> vmm_reservations; // by base
  std::map<unsigned long long, VmmPhysical> vmm_physical;    // by handle
  std::map<std::uintptr_t, VmmMapping> vmm_mappings;         // by address
  unsigned long long next_vmm_handle = 1;
  std::map<int, std::unique_ptr<CUmemPoolHandle_st>> default_pools;
  // Executables' device memory, as the H200 showed it (benchmark/probes/executable_memory.cu):
  // a per-device cache grown in 2 MiB pieces, bytes per node by type (set_executable_memory;
  // 0 until then), never given back to cudaMemGetInfo when executables are destroyed.
  std::size_t mempool_reserve = 0; // set_mempool_reserve
  std::size_t exec_bytes_per_kernel_node = 0;
  std::size_t exec_bytes_per_other_node = 0;
  std::size_t stream_bytes = 0; // set_stream_memory: each live stream's share of the cache
  struct ExecCache {
    std::size_t used = 0;     // live executables' bytes
    std::size_t reserved = 0; // 2 MiB pieces taken, counted by cudaMemGetInfo
  };
  std::map<int, ExecCache> exec_caches;
  std::map<int, cudaMemPool_t> current_pools;
  std::unordered_set<cudaMemPool_t> pools;                      // user-created, not yet freed
  std::map<unsigned long long, ConditionalHandle> cond_handles; // by HandleRef::key
  unsigned long long next_handle_key = 1;

  std::map<std::string, std::size_t> calls;
  std::map<std::string, std::vector<Fault>> faults;
  // Driver functions the entry-point lookup reports missing, with the answer it gives.
  std::map<std::string, cudaDriverEntryPointQueryResult> hidden_driver_functions;

  unsigned long long next_stream_id = 16;
  unsigned long long next_capture_id = 1;
  std::uint32_t next_graph_id = 1;
  unsigned long long next_exec_id = 1;
  unsigned long long next_buffer_id = 1;
};

State& state();

// Per-thread runtime state. A generation stamp lets reset() clear the state
// of every thread without reaching into their thread_local storage.
struct ThreadState {
  std::uint64_t generation = 0;
  cudaError_t last_error = cudaSuccess;
  int device = 0;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  bool in_callback = false;
  // Set by a driver entry point that runs a runtime one (driver.cpp): the call is counted and
  // fault-injected under this driver name, and leaves the runtime's last error alone.
  const char* as_driver = nullptr;
  // Nodes this thread's current call created, awaiting their CUPTI callback (graph, node).
  std::vector<std::pair<CUgraph_st*, CUgraphNode_st*>> created_nodes;
};
ThreadState& thread_state();

// --- CUPTI -----------------------------------------------------------------
// Queues the GRAPHNODE_CREATED callback for a new node if the subscriber enabled it.
void note_node_created(CUgraphNode_st* node);
// Makes this thread's queued callbacks. Called without the lock: the callback is user code and
// may take locks of its own, which another thread may hold while calling CUDA.
void deliver_cupti_callbacks();

// One runtime or driver call as CUPTI's API callbacks see it (CUPTI_CB_DOMAIN_RUNTIME_API or
// DRIVER_API): `callback` is null unless the subscriber enabled the call's callback id.
struct ApiCallback {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  CUpti_CallbackDomain domain = CUPTI_CB_DOMAIN_INVALID;
  CUpti_CallbackId cbid = 0;
  const char* name = nullptr;
  const void* params = nullptr;
  std::uint32_t correlation = 0;
};
// Looks up whether `name` is reported (under the lock), then makes the API_ENTER callback without
// it. A driver call is reported in the driver domain.
ApiCallback enter_api_callback(const char* name, bool driver, const void* params);
// Makes the API_EXIT callback of `call` with its result, if it had an entry.
void exit_api_callback(const ApiCallback& call, cudaError_t result);

// Pops an injected fault for `name`, if one is due on this call.
bool take_fault(const char* name, cudaError_t& error);

// Runs `body` as the runtime entry point `name`: counts the call, applies
// no-driver mode and fault injection, holds the global lock and records a
// failure as the thread's last error. Then, without the lock, makes the CUPTI
// callbacks for the nodes the call created. Around all of it, CUPTI's API entry and exit
// callbacks where enabled, with `params` as CUpti_CallbackData::functionParams (null, except for
// the calls whose parameter struct a client reads: the capture's begin and end).
template <class Body>
cudaError_t api(const char* name, Body&& body, bool needs_driver = true,
                const void* params = nullptr) {
  ThreadState& ts = thread_state();
  if (ts.in_callback) {
    // Host functions must not call CUDA; CUDA may report this.
    ts.last_error = cudaErrorNotPermitted;
    return cudaErrorNotPermitted;
  }
  State& st = state();
  const char* driver_name = std::exchange(ts.as_driver, nullptr);
  const char* counted = driver_name ? driver_name : name;
  const ApiCallback callback = enter_api_callback(counted, driver_name != nullptr, params);
  cudaError_t err = cudaSuccess;
  {
    std::lock_guard<std::recursive_mutex> lock(st.mu);
    ++st.calls[counted];
    if (st.no_driver && needs_driver) {
      err = cudaErrorInsufficientDriver;
    } else if (!take_fault(counted, err)) {
      err = body();
    }
    // cudaErrorNotReady reports status, not failure: it is not recorded.
    if (err != cudaSuccess && err != cudaErrorNotReady && !driver_name)
      ts.last_error = err;
  }
  // Still within the call, as CUPTI does, but once the nodes are complete and the lock is free.
  if (!ts.created_nodes.empty())
    deliver_cupti_callbacks();
  exit_api_callback(callback, err);
  return err;
}

// Like api(), for driver functions: counted, fault-injectable, locked; reported to CUPTI's driver
// API callbacks (without the lock) where cupti_cbids.inc lists the function.
template <class Body>
CUresult driver_api(const char* name, Body&& body) {
  if (thread_state().in_callback)
    return CUDA_ERROR_NOT_PERMITTED;
  const ApiCallback callback = enter_api_callback(name, true, nullptr);
  CUresult result = CUDA_SUCCESS;
  {
    State& st = state();
    std::lock_guard<std::recursive_mutex> lock(st.mu);
    ++st.calls[name];
    cudaError_t injected = cudaSuccess;
    if (st.no_driver)
      result = CUDA_ERROR_NOT_INITIALIZED;
    else if (take_fault(name, injected))
      result = static_cast<CUresult>(injected);
    else
      result = body();
  }
  exit_api_callback(callback, static_cast<cudaError_t>(result));
  return result;
}

// api() for a call whose parameter struct CUPTI's API callbacks hand over.
template <class Body>
cudaError_t api_with_params(const char* name, const void* params, Body&& body) {
  return api(name, std::forward<Body>(body), true, params);
}

// --- devices -------------------------------------------------------------
bool valid_device(int device);

// --- streams -------------------------------------------------------------
// Maps a handle (including 0, cudaStreamLegacy, cudaStreamPerThread) to its
// object, or nullptr if it is not a live stream.
CUstream_st* resolve_stream(cudaStream_t handle);

// --- capture -------------------------------------------------------------
// Where a stream operation goes: captured into `capture` or run eagerly.
struct Target {
  CUstream_st* stream = nullptr;
  Capture* capture = nullptr;
};
// Validates the stream and applies the capture rules every stream operation
// obeys (invalidated capture, implicit legacy-stream dependency).
cudaError_t begin_stream_op(cudaStream_t handle, Target& target);
// Appends a node to the capture graph after the stream's frontier and makes
// it the new frontier.
CUgraphNode_st* capture_node(const Target& target, cudaGraphNodeType type);
// For calls CUDA deems unsafe during capture (implicit synchronization or
// allocation): fails with cudaErrorStreamCaptureUnsupported, invalidating
// the offending captures, when the calling thread's capture mode forbids it.
cudaError_t check_unsafe_call();
// cudaDeviceSynchronize is illegal during any capture, in any mode.
cudaError_t check_device_sync();
// Work on the legacy stream while a blocking stream captures.
cudaError_t check_legacy_implicit(const CUstream_st* stream);
Capture* find_capture(unsigned long long id);
Capture* event_capture(const CUevent_st* event);
void end_all_captures();
void invalidate(Capture* capture);

// --- graphs --------------------------------------------------------------
CUgraph_st* new_graph(bool user_visible);
void destroy_graph(CUgraph_st* graph);
// Records where the H200 would crash or corrupt memory (cuda_double::violations()).
void violation(std::string what);
std::atomic<bool>& violations_are_expected_flag();
CUgraphNode_st* add_node(CUgraph_st* graph, cudaGraphNodeType type, CUgraphNode_st* const* deps,
                         const cudaGraphEdgeData* edges, std::size_t count);
bool is_node_of(const CUgraph_st* graph, const CUgraphNode_st* node);
CUgraph_st* clone_graph(const CUgraph_st& source, bool user_visible);
void release_graph_contents(CUgraph_st& graph);
bool has_memory_nodes(const CUgraph_st& graph, bool alloc_only);
void release_node_payload(CUgraphNode_st& node);
void destroy_exec(cudaGraphExec_t exec);
cudaError_t run_graph(const std::vector<CUgraphNode_st*>& order);
bool topological_order(const CUgraph_st& graph, std::vector<CUgraphNode_st*>& order);
// Validates the common arguments of the functions that add a node to a graph.
cudaError_t check_add_node(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                           std::size_t count);

// --- conditional nodes (conditional.cpp) -------------------------------------
// A graph the user may name: user-visible, or a conditional body of one.
bool live_graph_or_body(const CUgraph_st* graph);
// True when a capture in progress writes into `graph` or into a body nested in it.
bool capture_within(const CUgraph_st* graph);
// True when a capture in progress writes into a body nested in the conditional node `node`.
bool capture_within(const CUgraphNode_st* node);
bool has_conditional_nodes(const CUgraph_st& graph);
void clone_conditional(const CUgraphNode_st& source, CUgraphNode_st& copy, bool user_visible);
void release_conditional(CUgraphNode_st& node);
// A copy of a graph lists the handles of its source too; a graph that goes releases its own.
void retain_handles(const CUgraph_st& graph);
void release_handles(CUgraph_st& graph);
// Instantiation rules: body node types, acyclic bodies, every handle used by a node.
cudaError_t check_conditionals(const CUgraph_st& graph, cudaGraphInstantiateResult& result,
                               cudaGraphNode_t& err_node);
// At the start of a launch: handles created with cudaGraphCondAssignDefault take their default.
void apply_condition_defaults(const CUgraph_st& graph);
cudaError_t run_conditional(const CUgraphNode_st& node);

// --- kernels (kernel.cpp) -----------------------------------------------------
// A launch's arguments copied from `args` (one pointer per parameter), for a kernel with a model.
std::unique_ptr<KernelCall> copy_launch(Kernel& kernel, dim3 grid, dim3 block, unsigned shared,
                                        void* const* args);
// Runs the kernel's model on a launch's copies.
cudaError_t run_kernel(const KernelCall& call);
void reset_kernel_runs();
// The driver's kernel functions (driver.cpp serves them, counted and fault-injected).
CUresult kernel_node_params(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v2& out);
CUresult function_param_info(CUfunction func, std::size_t index, std::size_t* offset,
                             std::size_t* size);
CUresult function_name(const char** name, CUfunction func);
CUresult kernel_function(CUfunction* func, CUkernel kernel);
// cuGraphKernelNodeSetParams and cuGraphExecKernelNodeSetParams (v2 parameters).
CUresult set_kernel_node_params(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2* params);
CUresult exec_set_kernel_node_params(CUgraphExec exec, CUgraphNode node,
                                     const CUDA_KERNEL_NODE_PARAMS_v2* params);

// --- executables (exec.cpp) ------------------------------------------------
// The executable's copy of a node of the graph it was instantiated from, or of a conditional
// body of it (CUDA patches body nodes of an executable: benchmark/probes/rebind_limits.cu);
// null for any other node, a child graph's included.
CUgraphNode_st* exec_counterpart(CUgraphExec_st& exec, const CUgraphNode_st& node);
bool is_live_exec(cudaGraphExec_t exec);

// --- memory --------------------------------------------------------------
Allocation* find_allocation(const void* ptr);
// Device memory in use: allocations, memory pools' caches, VMM physical allocations.
std::size_t device_bytes_in_use();
// An allocation the device cannot hold: each executable cache keeps only the pieces its live
// executables use (driver 580 gave most of its cache back so: executable_memory_release.cu).
void squeeze_exec_caches();
// Enters an allocation in the registry (a new buffer id).
Allocation& register_allocation(void* base, std::size_t size, std::size_t capacity,
                                Allocation::Kind kind, int device);
// True when [ptr, ptr+bytes) lies in device-accessible memory. Reserved but
// unbacked graph allocations count only if `allow_reserved`.
bool device_range(const void* ptr, std::size_t bytes, bool allow_reserved);
cudaError_t check_memcpy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                         bool allow_reserved);
cudaError_t check_memset(const cudaMemsetParams& params, bool allow_reserved);
cudaError_t check_memcpy3d(const cudaMemcpy3DParms* p);
void do_memcpy3d(const cudaMemcpy3DParms& p);
void do_memset(const cudaMemsetParams& p);
cudaMemcpy3DParms memcpy1d_params(void* dst, const void* src, std::size_t count,
                                  cudaMemcpyKind kind);
std::size_t memset_extent(const cudaMemsetParams& p);
// Graph allocations: reserve an address (alloc node creation), drop a
// reference (node destruction), back/unback it (alloc/free at launch).
void* reserve_graph_allocation(std::size_t size, int device);
void release_graph_reference(void* base);
void map_graph_allocation(Allocation& a);
void unmap_graph_allocation(Allocation& a);
void release_pools_on_sync();
void free_all_memory();
// VMM (vmm.cpp): bytes of physical allocations alive; forget everything (reset).
std::size_t vmm_physical_bytes();
// Reservations and physical allocations alive (live_allocations() counts them).
std::size_t live_vmm_objects();
void free_all_vmm();
// The double's driver functions for VMM, for the entry-point table (driver.cpp).
struct VmmEntryPoint {
  const char* symbol;
  void* function;
};
extern const VmmEntryPoint kVmmEntryPoints[8];

// --- bookkeeping -----------------------------------------------------------
void record_event_now(CUevent_st* event);
void run_host_function(cudaHostFn_t fn, void* data);

} // namespace cuda_double::detail
