// CUPTI's callback API: the one subscriber, GRAPHNODE_CREATED callbacks, and the controls that
// model other CUPTI users; the activity API's queued kernel records.
#include <cuda_double/cupti_control.hpp>

#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

struct Seen {
  void* userdata;
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUgraph graph;
  CUgraphNode node;
  CUgraphNodeType type;
  std::thread::id thread;
};

struct Recorder {
  std::mutex mu; // what a real callback would take: the double must not hold its own lock
  std::vector<Seen> seen;
};

void CUPTIAPI record(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const void* cbdata) {
  auto* r = static_cast<Recorder*>(userdata);
  const auto* resource = static_cast<const CUpti_ResourceData*>(cbdata);
  const auto* data = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
  std::lock_guard<std::mutex> lock(r->mu);
  r->seen.push_back(Seen{userdata, domain, cbid, data->graph, data->node, data->nodeType,
                         std::this_thread::get_id()});
}

CUptiResult enable_created(CUpti_SubscriberHandle h, bool on = true) {
  return cuptiEnableCallback(on ? 1 : 0, h, CUPTI_CB_DOMAIN_RESOURCE,
                             CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
}

// Subscribes `r` and enables GRAPHNODE_CREATED.
CUpti_SubscriberHandle subscribe(Recorder& r) {
  CUpti_SubscriberHandle h = nullptr;
  REQUIRE(cuptiSubscribe(&h, record, &r) == CUPTI_SUCCESS);
  REQUIRE(enable_created(h) == CUPTI_SUCCESS);
  return h;
}

cudaGraphNode_t empty_node(cudaGraph_t g) {
  cudaGraphNode_t n = nullptr;
  CUDA_OK(cudaGraphAddEmptyNode(&n, g, nullptr, 0));
  return n;
}

std::uint32_t creation_index(cudaGraphNode_t n) {
  return static_cast<std::uint32_t>(cuda_double::node_id(n) & 0xffffffffu);
}

void no_op(void*) {}

// Checks that `seen` reports exactly `nodes` of `g`, in order, as GRAPHNODE_CREATED.
void check_reported(const std::vector<Seen>& seen, cudaGraph_t g,
                    const std::vector<cudaGraphNode_t>& nodes, const Recorder& r) {
  REQUIRE(seen.size() == nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    CHECK(seen[i].userdata == &r);
    CHECK(seen[i].domain == CUPTI_CB_DOMAIN_RESOURCE);
    CHECK(seen[i].cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
    CHECK(seen[i].graph == g);
    CHECK(seen[i].node == nodes[i]);
    CHECK(seen[i].type == CU_GRAPH_NODE_TYPE_KERNEL); // as on the H200, whatever the node is
    CHECK(seen[i].thread == std::this_thread::get_id());
  }
}

} // namespace

TEST_CASE("CUPTI allows one subscriber at a time", "[cupti]") {
  Clean clean;
  CUpti_SubscriberHandle a = nullptr, b = nullptr;
  CHECK(cuptiSubscribe(nullptr, record, nullptr) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  REQUIRE(cuptiSubscribe(&a, record, nullptr) == CUPTI_SUCCESS);
  CHECK(a != nullptr);
  CHECK(cuda_double::cupti_subscribed());
  CHECK(cuptiSubscribe(&b, record, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(b == nullptr);

  CHECK(cuptiUnsubscribe(nullptr) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiUnsubscribe(reinterpret_cast<CUpti_SubscriberHandle>(&b)) ==
        CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuda_double::cupti_subscribed());
  REQUIRE(cuptiUnsubscribe(a) == CUPTI_SUCCESS);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  CHECK(cuptiUnsubscribe(a) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(enable_created(a) == CUPTI_ERROR_INVALID_PARAMETER);

  // A new subscriber: the released handle stays invalid.
  REQUIRE(cuptiSubscribe(&b, record, nullptr) == CUPTI_SUCCESS);
  CHECK(b != a);
  CHECK(cuda_double::cupti_subscribed());
  CHECK(cuptiUnsubscribe(a) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(enable_created(a) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiUnsubscribe(b) == CUPTI_SUCCESS);

  CHECK(cuda_double::calls("cuptiSubscribe") == 4);
  CHECK(cuda_double::calls("cuptiUnsubscribe") == 6);
  CHECK(cuda_double::calls("cuptiEnableCallback") == 2);
}

TEST_CASE("cuptiEnableCallback takes the subscriber's handle and a valid callback", "[cupti]") {
  Clean clean;
  CUpti_SubscriberHandle h = nullptr;
  REQUIRE(cuptiSubscribe(&h, record, nullptr) == CUPTI_SUCCESS);
  CHECK(enable_created(h) == CUPTI_SUCCESS);
  CHECK(enable_created(h, false) == CUPTI_SUCCESS);
  CHECK(enable_created(h, false) == CUPTI_SUCCESS); // disabling twice is fine
  CHECK(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEmptyNode_v10000) ==
        CUPTI_SUCCESS);
  CHECK(enable_created(nullptr) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_INVALID, 1) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_SIZE, 1) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_INVALID) ==
        CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_SIZE) ==
        CUPTI_ERROR_INVALID_PARAMETER);
}

TEST_CASE("captured nodes are reported at once, in creation order, with their graph", "[cupti]") {
  Clean clean;
  cudaStream_t origin = make_stream(), side = make_stream();
  cudaEvent_t fork = make_event(cudaEventDisableTiming), join = make_event(cudaEventDisableTiming),
              external = make_event(cudaEventDisableTiming);
  auto* dev = static_cast<char*>(device_alloc(256));
  // An executable to launch into the capture, made before subscribing.
  cudaGraph_t inner = make_graph();
  empty_node(inner);
  empty_node(inner);
  cudaGraphExec_t inner_exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&inner_exec, inner, 0));

  Recorder r;
  subscribe(r);
  CUDA_OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CHECK(r.seen.empty()); // beginning a capture creates no node
  CUDA_OK(cudaMemsetAsync(dev, 1, 16, origin));
  cudaStreamCaptureStatus status{};
  cudaGraph_t capturing = nullptr;
  CUDA_OK(cudaStreamGetCaptureInfo(origin, &status, nullptr, &capturing));
  REQUIRE(r.seen.size() == 1); // before the call returned
  CHECK(r.seen[0].graph == capturing);
  CHECK(creation_index(r.seen[0].node) == 0);

  CUDA_OK(cudaEventRecord(fork, origin)); // no node
  CUDA_OK(cudaStreamWaitEvent(side, fork, 0));
  CUDA_OK(cudaMemcpyAsync(dev + 16, dev, 16, cudaMemcpyDeviceToDevice, side));
  CUDA_OK(cudaLaunchHostFunc(origin, no_op, nullptr));
  CUDA_OK(cudaEventRecord(join, side));
  CUDA_OK(cudaStreamWaitEvent(origin, join, 0));
  CUDA_OK(cudaEventRecordWithFlags(external, origin, cudaEventRecordExternal));
  CUDA_OK(cudaStreamWaitEvent(origin, external, cudaEventWaitExternal));
  void* scratch = nullptr;
  CUDA_OK(cudaMallocAsync(&scratch, 64, origin));
  CUDA_OK(cudaFreeAsync(scratch, origin));
  CUDA_OK(cudaGraphLaunch(inner_exec, origin)); // one child graph node, not its contents
  CHECK(cudaLaunchHostFunc(origin, nullptr, nullptr) == cudaErrorInvalidValue); // no node
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(origin, &g));
  CHECK(g == capturing);

  const auto nodes = graph_nodes(g);
  REQUIRE(nodes.size() == 8);
  check_reported(r.seen, g, nodes, r);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    CHECK(creation_index(nodes[i]) == i);
  CHECK(type_of(nodes[1]) == cudaGraphNodeTypeMemcpy);
  CHECK(type_of(nodes[7]) == cudaGraphNodeTypeGraph);

  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaGraphExecDestroy(inner_exec));
  CUDA_OK(cudaGraphDestroy(inner));
}

TEST_CASE("explicitly added nodes are reported", "[cupti]") {
  Clean clean;
  auto* dev = static_cast<char*>(device_alloc(64));
  cudaEvent_t event = make_event();
  cudaGraph_t child = make_graph(); // before subscribing: its nodes are not the test's
  empty_node(child);
  cudaStream_t s = make_stream();

  Recorder r;
  subscribe(r);
  cudaGraph_t g = make_graph();
  CHECK(r.seen.empty());
  std::vector<cudaGraphNode_t> added;
  auto check_last = [&](cudaGraphNode_t n) {
    added.push_back(n);
    REQUIRE(r.seen.size() == added.size());
    CHECK(r.seen.back().node == n);
    CHECK(r.seen.back().graph == g);
  };
  cudaGraphNode_t n = nullptr;
  CUDA_OK(cudaGraphAddEmptyNode(&n, g, nullptr, 0));
  check_last(n);
  cudaHostNodeParams host{no_op, nullptr};
  CUDA_OK(cudaGraphAddHostNode(&n, g, &added[0], 1, &host));
  check_last(n);
  cudaMemsetParams memset{dev, 0, 7, 1, 16, 1};
  CUDA_OK(cudaGraphAddMemsetNode(&n, g, nullptr, 0, &memset));
  check_last(n);
  CUDA_OK(cudaGraphAddMemcpyNode1D(&n, g, nullptr, 0, dev + 16, dev, 16, cudaMemcpyDefault));
  check_last(n);
  cudaMemcpy3DParms copy{};
  copy.srcPtr = cudaPitchedPtr{dev, 16, 16, 1};
  copy.dstPtr = cudaPitchedPtr{dev + 32, 16, 16, 1};
  copy.extent = cudaExtent{16, 1, 1};
  copy.kind = cudaMemcpyDeviceToDevice;
  CUDA_OK(cudaGraphAddMemcpyNode(&n, g, nullptr, 0, &copy));
  check_last(n);
  CUDA_OK(cudaGraphAddEventRecordNode(&n, g, nullptr, 0, event));
  check_last(n);
  CUDA_OK(cudaGraphAddEventWaitNode(&n, g, nullptr, 0, event));
  check_last(n);
  CUDA_OK(cudaGraphAddChildGraphNode(&n, g, nullptr, 0, child)); // not the child's copied nodes
  check_last(n);
  // Failed additions create no node.
  CHECK(cudaGraphAddHostNode(&n, g, nullptr, 0, nullptr) == cudaErrorInvalidValue);
  CHECK(cudaGraphAddEmptyNode(&n, nullptr, nullptr, 0) == cudaErrorInvalidValue);
  CHECK(r.seen.size() == added.size());
  // Capturing into the graph continues its creation order.
  CUDA_OK(cudaStreamBeginCaptureToGraph(s, g, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(dev, 1, 16, s));
  cudaGraph_t same = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &same));
  CHECK(same == g);

  const auto nodes = graph_nodes(g);
  REQUIRE(nodes.size() == added.size() + 1);
  check_reported(r.seen, g, nodes, r);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    CHECK(creation_index(r.seen[i].node) == i);

  // Memory nodes, in a graph of their own (a graph with them cannot be embedded).
  cudaGraph_t mem = make_graph();
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location = {cudaMemLocationTypeDevice, 0};
  alloc.bytesize = 64;
  cudaGraphNode_t a = nullptr, f = nullptr;
  CUDA_OK(cudaGraphAddMemAllocNode(&a, mem, nullptr, 0, &alloc));
  CUDA_OK(cudaGraphAddMemFreeNode(&f, mem, &a, 1, alloc.dptr));
  REQUIRE(r.seen.size() == nodes.size() + 2);
  check_reported({r.seen.end() - 2, r.seen.end()}, mem, {a, f}, r);
  CUDA_OK(cudaGraphDestroy(mem));
  CUDA_OK(cudaGraphDestroy(g));
}

TEST_CASE("each graph's nodes are reported in its own creation order", "[cupti]") {
  Clean clean;
  cudaStream_t s1 = make_stream(), s2 = make_stream();
  auto* dev = static_cast<char*>(device_alloc(64));
  Recorder r;
  subscribe(r);
  CUDA_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
  cudaGraph_t explicit_graph = make_graph();
  for (int i = 0; i < 3; ++i) {
    CUDA_OK(cudaMemsetAsync(dev, i, 16, s1));
    CUDA_OK(cudaMemsetAsync(dev + 16, i, 16, s2));
    empty_node(explicit_graph);
    CUDA_OK(cudaMemsetAsync(dev + 32, i, 16, s2));
  }
  cudaGraph_t g1 = nullptr, g2 = nullptr;
  CUDA_OK(cudaStreamEndCapture(s1, &g1));
  CUDA_OK(cudaStreamEndCapture(s2, &g2));
  REQUIRE(r.seen.size() == 12);
  for (cudaGraph_t g : {g1, g2, explicit_graph}) {
    std::vector<cudaGraphNode_t> reported;
    for (const Seen& seen : r.seen) {
      if (seen.graph == g)
        reported.push_back(seen.node);
    }
    CHECK(reported == graph_nodes(g));
    for (std::size_t i = 0; i < reported.size(); ++i)
      CHECK(creation_index(reported[i]) == i);
  }
  CUDA_OK(cudaGraphDestroy(g1));
  CUDA_OK(cudaGraphDestroy(g2));
  CUDA_OK(cudaGraphDestroy(explicit_graph));
}

TEST_CASE("no callback unless enabled and subscribed, nor for clones and executables", "[cupti]") {
  Clean clean;
  Recorder r;
  CUpti_SubscriberHandle h = nullptr;
  REQUIRE(cuptiSubscribe(&h, record, &r) == CUPTI_SUCCESS);
  cudaGraph_t g = make_graph();
  cudaGraphNode_t first = empty_node(g);
  CHECK(r.seen.empty()); // subscribing enables nothing

  // Other callbacks of the resource domain enable nothing the double reports.
  REQUIRE(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_GRAPHNODE_CREATE_STARTING) == CUPTI_SUCCESS);
  empty_node(g);
  CHECK(r.seen.empty());

  REQUIRE(enable_created(h) == CUPTI_SUCCESS);
  cudaGraphNode_t third = empty_node(g);
  REQUIRE(r.seen.size() == 1);
  CHECK(r.seen[0].node == third);
  CHECK(creation_index(third) == 2);

  cudaGraph_t clone = nullptr;
  CUDA_OK(cudaGraphClone(&clone, g));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  cudaGraph_t same_shape = make_graph();
  for (int i = 0; i < 3; ++i)
    empty_node(same_shape);
  REQUIRE(r.seen.size() == 4);
  cudaGraphExecUpdateResultInfo info{};
  CUDA_OK(cudaGraphExecUpdate(exec, same_shape, &info));
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(r.seen.size() == 4);

  REQUIRE(enable_created(h, false) == CUPTI_SUCCESS);
  empty_node(g);
  CHECK(r.seen.size() == 4);

  REQUIRE(enable_created(h) == CUPTI_SUCCESS);
  REQUIRE(cuptiUnsubscribe(h) == CUPTI_SUCCESS);
  empty_node(g);
  CHECK(r.seen.size() == 4);
  // A new subscriber starts with nothing enabled.
  REQUIRE(cuptiSubscribe(&h, record, &r) == CUPTI_SUCCESS);
  empty_node(g);
  CHECK(r.seen.size() == 4);

  // A subscriber without a callback function gets nothing, and nothing breaks.
  REQUIRE(cuptiUnsubscribe(h) == CUPTI_SUCCESS);
  REQUIRE(cuptiSubscribe(&h, nullptr, &r) == CUPTI_SUCCESS);
  REQUIRE(enable_created(h) == CUPTI_SUCCESS);
  CUDA_OK(cudaGraphAddEmptyNode(&third, g, &first, 1));
  CHECK(r.seen.size() == 4);

  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(clone));
  CUDA_OK(cudaGraphDestroy(same_shape));
  CUDA_OK(cudaGraphDestroy(g));
}

namespace {

// The callback waits for another thread to make a CUDA call: it could not if the double held
// its lock during the callback.
struct Handshake {
  std::atomic<bool> in_callback{false};
  std::atomic<bool> other_done{false};
  bool saw_other = false;
  CUptiResult id_result = CUPTI_ERROR_UNKNOWN;
  std::uint64_t id = 0;
};

bool wait_for(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!flag && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  return flag;
}

void CUPTIAPI wait_for_other_thread(void* userdata, CUpti_CallbackDomain, CUpti_CallbackId,
                                    const void* cbdata) {
  auto* h = static_cast<Handshake*>(userdata);
  const auto* data = static_cast<const CUpti_GraphData*>(
      static_cast<const CUpti_ResourceData*>(cbdata)->resourceDescriptor);
  h->id_result = cuptiGetGraphNodeId(data->node, &h->id); // the node is complete
  h->in_callback = true;
  h->saw_other = wait_for(h->other_done);
}

} // namespace

TEST_CASE("the callback is made without the double's lock, once the node is complete", "[cupti]") {
  Clean clean;
  Handshake hs;
  CUpti_SubscriberHandle h = nullptr;
  REQUIRE(cuptiSubscribe(&h, wait_for_other_thread, &hs) == CUPTI_SUCCESS);
  REQUIRE(enable_created(h) == CUPTI_SUCCESS);
  cudaGraph_t g = make_graph();
  cudaError_t other = cudaErrorUnknown;
  std::thread t([&] {
    if (!wait_for(hs.in_callback))
      return;
    other = cudaGraphDestroy(make_graph());
    hs.other_done = true;
  });
  cudaGraphNode_t n = empty_node(g);
  t.join();
  CHECK(hs.saw_other);
  CHECK(other == cudaSuccess);
  CHECK(hs.id_result == CUPTI_SUCCESS);
  CHECK(hs.id == cuda_double::node_id(n));
  CUDA_OK(cudaGraphDestroy(g));
}

TEST_CASE("another CUPTI client holding the subscriber refuses cuptiSubscribe only", "[cupti]") {
  Clean clean;
  cuda_double::set_cupti_subscriber_taken(true);
  Recorder r;
  CUpti_SubscriberHandle h = nullptr;
  CHECK(cuptiSubscribe(&h, record, &r) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(h == nullptr);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  CHECK(cuptiSubscribe(nullptr, record, &r) == CUPTI_ERROR_INVALID_PARAMETER);
  // The rest of CUPTI works.
  cudaGraph_t g = make_graph();
  cudaGraphNode_t n = empty_node(g);
  std::uint32_t graph_id = 0;
  std::uint64_t node_id = 0;
  CHECK(cuptiGetGraphId(g, &graph_id) == CUPTI_SUCCESS);
  CHECK(cuptiGetGraphNodeId(n, &node_id) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  CHECK(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(cuptiUnsubscribe(nullptr) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(r.seen.empty());

  cuda_double::set_cupti_subscriber_taken(false);
  REQUIRE(cuptiSubscribe(&h, record, &r) == CUPTI_SUCCESS);
  CHECK(cuda_double::cupti_subscribed());
  CUDA_OK(cudaGraphDestroy(g));
}

TEST_CASE("a tool holding CUPTI refuses the callback API too", "[cupti]") {
  Clean clean;
  Recorder r;
  CUpti_SubscriberHandle h = nullptr;
  REQUIRE(cuptiSubscribe(&h, record, &r) == CUPTI_SUCCESS);
  cuda_double::set_cupti_held_by_other_tool(true);
  CUpti_SubscriberHandle second = nullptr;
  CHECK(cuptiSubscribe(&second, record, &r) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(cuptiSubscribe(nullptr, record, &r) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(enable_created(h) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(cuptiUnsubscribe(h) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(cuda_double::cupti_subscribed());
  CHECK(cuda_double::calls("cuptiSubscribe") == 3);
  CHECK(cuda_double::calls("cuptiUnsubscribe") == 1);

  cuda_double::set_cupti_held_by_other_tool(false);
  CHECK(cuptiUnsubscribe(h) == CUPTI_SUCCESS);
  CHECK_FALSE(cuda_double::cupti_subscribed());
}

TEST_CASE("failures injected into the callback API", "[cupti]") {
  Clean clean;
  const auto not_initialized = static_cast<cudaError_t>(CUPTI_ERROR_NOT_INITIALIZED);
  cuda_double::fail_call("cuptiSubscribe", not_initialized);
  cuda_double::fail_call("cuptiEnableCallback", not_initialized);
  cuda_double::fail_call("cuptiUnsubscribe", not_initialized);
  Recorder r;
  CUpti_SubscriberHandle h = nullptr;
  CHECK(cuptiSubscribe(&h, record, &r) == CUPTI_ERROR_NOT_INITIALIZED);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  REQUIRE(cuptiSubscribe(&h, record, &r) == CUPTI_SUCCESS);
  CHECK(enable_created(h) == CUPTI_ERROR_NOT_INITIALIZED);
  cudaGraph_t g = make_graph();
  empty_node(g);
  CHECK(r.seen.empty());
  CHECK(cuptiUnsubscribe(h) == CUPTI_ERROR_NOT_INITIALIZED);
  CHECK(cuda_double::cupti_subscribed());
  CHECK(cuptiUnsubscribe(h) == CUPTI_SUCCESS);
  CUDA_OK(cudaGraphDestroy(g));
}

TEST_CASE("reset releases the subscriber and clears the CUPTI controls", "[cupti]") {
  Clean clean;
  Recorder r;
  CUpti_SubscriberHandle h = subscribe(r);
  cuda_double::set_cupti_subscriber_taken(true);
  cuda_double::set_cupti_held_by_other_tool(true);
  cuda_double::reset();

  CHECK_FALSE(cuda_double::cupti_subscribed());
  CHECK(enable_created(h) == CUPTI_ERROR_INVALID_PARAMETER); // not held, and not a subscriber
  cudaGraph_t g = make_graph();
  empty_node(g);
  CHECK(r.seen.empty());
  REQUIRE(cuptiSubscribe(&h, record, &r) == CUPTI_SUCCESS); // not taken
  empty_node(g);
  CHECK(r.seen.empty()); // nothing enabled
  CUDA_OK(cudaGraphDestroy(g));
}

namespace {

// What the activity buffer callbacks were given: the kernel records, copied out of each buffer.
struct ActivitySeen {
  struct Kernel {
    std::string name;
    std::uint64_t start;
    std::uint64_t end;
    std::uint64_t node;
    std::uint32_t graph;
  };
  std::vector<Kernel> kernels;
  int buffers = 0;
};
ActivitySeen activity_seen;

void CUPTIAPI give_buffer(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  constexpr std::size_t bytes = 2 * sizeof(CUpti_ActivityKernel10); // two records per buffer
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
  *size = bytes;
  *max_records = 0;
}

void CUPTIAPI take_buffer(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                          std::size_t valid) {
  ++activity_seen.buffers;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    const CUpti_ActivityKind kind = record->kind; // a packed field: Catch cannot bind it
    REQUIRE(kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    activity_seen.kernels.push_back(
        {kernel->name, kernel->start, kernel->end, kernel->graphNodeId, kernel->graphId});
  }
  std::free(buffer);
}

} // namespace

TEST_CASE("queued kernel records are delivered at a flush, only while kernel activity is on",
          "[cupti]") {
  Clean clean;
  activity_seen = {};
  REQUIRE(cuptiActivityRegisterCallbacks(give_buffer, take_buffer) == CUPTI_SUCCESS);
  cuda_double::kernel_activity kernel;
  kernel.name = "before";
  CHECK_FALSE(cuda_double::queue_kernel_activity(kernel)); // not enabled: nothing ran, for CUPTI
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  for (std::uint32_t i = 0; i < 3; ++i) {
    const std::string name = "k" + std::to_string(i); // copied: gone before the flush
    kernel.name = name.c_str();
    kernel.start_ns = 10 * i;
    kernel.end_ns = 10 * i + 5;
    kernel.graph_node_id = (std::uint64_t{7} << 32) | i;
    kernel.graph_id = 7;
    CHECK(cuda_double::queue_kernel_activity(kernel));
  }
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  kernel.name = "after";
  CHECK_FALSE(cuda_double::queue_kernel_activity(kernel));
  CHECK(activity_seen.kernels.empty()); // buffered until the flush
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  REQUIRE(activity_seen.kernels.size() == 3);
  CHECK(activity_seen.buffers == 2); // two records fit in one buffer
  for (std::uint32_t i = 0; i < 3; ++i) {
    CHECK(activity_seen.kernels[i].name == "k" + std::to_string(i));
    CHECK(activity_seen.kernels[i].start == 10 * i);
    CHECK(activity_seen.kernels[i].end == 10 * i + 5);
    CHECK(activity_seen.kernels[i].node == ((std::uint64_t{7} << 32) | i));
    CHECK(activity_seen.kernels[i].graph == 7);
  }
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS); // delivered once
  CHECK(activity_seen.kernels.size() == 3);

  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  CHECK(cuda_double::queue_kernel_activity(kernel));
  cuda_double::reset(); // drops what was not delivered, and turns the activity off
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(activity_seen.kernels.size() == 3);
  CHECK_FALSE(cuda_double::queue_kernel_activity(kernel));
}

namespace {

// What the API callbacks (CUPTI_CB_DOMAIN_RUNTIME_API / DRIVER_API) reported.
struct ApiSeen {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  std::string name;
  int result;                // at the exit
  cudaStream_t param_stream; // the first parameter of a capture's begin or end
  std::uint32_t correlation;
};

struct ApiRecorder {
  std::mutex mu;
  std::vector<ApiSeen> seen;
};

void CUPTIAPI record_api(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* cbdata) {
  auto* r = static_cast<ApiRecorder*>(userdata);
  const auto* call = static_cast<const CUpti_CallbackData*>(cbdata);
  const int result = call->callbackSite == CUPTI_API_EXIT && call->functionReturnValue
                         ? *static_cast<const int*>(call->functionReturnValue)
                         : -1;
  const cudaStream_t stream =
      call->functionParams ? *static_cast<const cudaStream_t*>(call->functionParams) : nullptr;
  std::lock_guard<std::mutex> lock(r->mu);
  r->seen.push_back(ApiSeen{domain, cbid, call->callbackSite, call->functionName, result, stream,
                            call->correlationId});
}

} // namespace

TEST_CASE("cuptiEnableDomain reports each runtime call's entry and exit, with its result",
          "[cupti]") {
  Clean clean;
  ApiRecorder r;
  CUpti_SubscriberHandle h = nullptr;
  REQUIRE(cuptiSubscribe(&h, record_api, &r) == CUPTI_SUCCESS);
  CHECK(cuptiEnableDomain(1, nullptr, CUPTI_CB_DOMAIN_RUNTIME_API) ==
        CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_INVALID) == CUPTI_ERROR_INVALID_PARAMETER);
  REQUIRE(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  cudaStream_t s = make_stream();
  void* p = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaMalloc(&p, 16) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  REQUIRE(cuptiEnableDomain(0, h, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  CUDA_OK(cudaStreamSynchronize(s)); // not reported: disabled
  std::vector<ApiSeen> seen;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    seen = r.seen;
  }
  // cudaStreamCreateWithFlags, then begin, malloc, end: an entry and an exit each.
  REQUIRE(seen.size() == 8);
  CHECK(seen[0].name == "cudaStreamCreateWithFlags");
  const CUpti_CallbackId ids[] = {CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000};
  const int results[] = {cudaSuccess, cudaErrorStreamCaptureUnsupported,
                         cudaErrorStreamCaptureInvalidated};
  for (std::size_t call = 0; call < 3; ++call) {
    const ApiSeen& entry = seen[2 + 2 * call];
    const ApiSeen& exit = seen[3 + 2 * call];
    CHECK(entry.domain == CUPTI_CB_DOMAIN_RUNTIME_API);
    CHECK(entry.cbid == ids[call]);
    CHECK(exit.cbid == ids[call]);
    CHECK(entry.site == CUPTI_API_ENTER);
    CHECK(exit.site == CUPTI_API_EXIT);
    CHECK(entry.correlation == exit.correlation);
    CHECK(exit.result == results[call]);
  }
  CHECK(seen[2].name == "cudaStreamBeginCapture");
  CHECK(seen[2].param_stream == s); // the begin's and the end's parameter structs
  CHECK(seen[7].param_stream == s);
  CHECK(seen[4].param_stream == nullptr); // no parameters for the others
  CHECK(seen[2].correlation != seen[4].correlation);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK(cuptiUnsubscribe(h) == CUPTI_SUCCESS);
}

TEST_CASE("API callbacks: one id enabled, the driver domain, none after unsubscribing", "[cupti]") {
  Clean clean;
  ApiRecorder r;
  CUpti_SubscriberHandle h = nullptr;
  REQUIRE(cuptiSubscribe(&h, record_api, &r) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020) ==
          CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
  cudaStream_t s = make_stream(); // not reported
  CUDA_OK(cudaStreamSynchronize(s));
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuStreamGetCaptureInfo", &function, 13000,
                                           cudaEnableDefault, &found));
  using capture_info_fn = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                       const CUgraphNode**, const CUgraphEdgeData**, size_t*);
  CUstreamCaptureStatus status{};
  CHECK(reinterpret_cast<capture_info_fn>(function)(s, &status, nullptr, nullptr, nullptr, nullptr,
                                                    nullptr) == CUDA_SUCCESS);
  CHECK(reinterpret_cast<capture_info_fn>(function)(s, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                    nullptr) == CUDA_ERROR_INVALID_VALUE);
  // Disabling the runtime domain disables the ids enabled one by one too.
  REQUIRE(cuptiEnableDomain(0, h, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  CUDA_OK(cudaStreamSynchronize(s));
  REQUIRE(cuptiUnsubscribe(h) == CUPTI_SUCCESS);
  CHECK(reinterpret_cast<capture_info_fn>(function)(s, &status, nullptr, nullptr, nullptr, nullptr,
                                                    nullptr) == CUDA_SUCCESS);
  std::vector<ApiSeen> seen;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    seen = r.seen;
  }
  REQUIRE(seen.size() == 6);
  CHECK(seen[0].name == "cudaStreamSynchronize");
  CHECK(seen[1].result == cudaSuccess);
  for (std::size_t i = 2; i < 6; ++i) {
    CHECK(seen[i].domain == CUPTI_CB_DOMAIN_DRIVER_API);
    CHECK(seen[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo);
    CHECK(seen[i].name == "cuStreamGetCaptureInfo");
  }
  CHECK(seen[3].result == CUDA_SUCCESS);
  CHECK(seen[5].result == CUDA_ERROR_INVALID_VALUE); // a CUresult
  CUDA_OK(cudaStreamDestroy(s));
}
