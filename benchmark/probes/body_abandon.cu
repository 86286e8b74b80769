// Probe (kept, docs/reliability.md): what CUDA does when a conditional body's capture is
// abandoned with work forked to another stream and never joined back, and which teardown order
// is safe. Each case runs in a child process, so a crash is reported instead of ending the probe.
//
//   nvcc -std=c++20 -arch=sm_90 -o body_abandon body_abandon.cu && ./body_abandon
#include <cuda_runtime.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

__global__ void tiny(int* p) {
  if (p != nullptr) {
    *p += 1;
  }
}

#define SAY(call)                                                                                  \
  do {                                                                                             \
    cudaError_t s_ = (call);                                                                       \
    std::printf("  %-60s -> %s\n", #call, cudaGetErrorName(s_));                                   \
    static_cast<void>(cudaGetLastError());                                                         \
  } while (0)

static const char* status_name(cudaStreamCaptureStatus s) {
  return s == cudaStreamCaptureStatusNone     ? "none"
         : s == cudaStreamCaptureStatusActive ? "active"
                                              : "invalidated";
}

static void capturing(const char* name, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  cudaGraph_t graph = nullptr;
  const cudaError_t e =
      cudaStreamGetCaptureInfo(stream, &status, &id, &graph, nullptr, nullptr, nullptr);
  std::printf("  %s: %s (%s), capture id %llu, graph %p\n", name, status_name(status),
              cudaGetErrorName(e), id, static_cast<void*>(graph));
  static_cast<void>(cudaGetLastError());
}

struct setup {
  cudaStream_t s{}, body{}, side{}, inner{};
  cudaEvent_t e{};
  cudaGraph_t parent{};
  cudaGraphNode_t node{};
  cudaGraph_t body_graph{};
  cudaGraphConditionalHandle handle{};
};

// Parent capture on s; a WHILE node whose body is captured on `body`; inside the body, a fork to
// `side` that is never joined.
static setup open_body(bool fork_unjoined, cudaGraphConditionalNodeType type,
                       cudaStreamCaptureMode body_mode = cudaStreamCaptureModeGlobal) {
  setup x;
  cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&x.body, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&x.side, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&x.e, cudaEventDisableTiming);
  SAY(cudaStreamBeginCapture(x.s, cudaStreamCaptureModeGlobal));
  tiny<<<1, 1, 0, x.s>>>(nullptr);
  cudaStreamCaptureStatus status{};
  const cudaGraphNode_t* deps = nullptr;
  std::size_t count = 0;
  SAY(cudaStreamGetCaptureInfo(x.s, &status, nullptr, &x.parent, &deps, nullptr, &count));
  SAY(cudaGraphConditionalHandleCreate(&x.handle, x.parent, 0, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = x.handle;
  params.conditional.type = type;
  params.conditional.size = 1;
  SAY(cudaGraphAddNode(&x.node, x.parent, deps, nullptr, count, &params));
  x.body_graph = params.conditional.phGraph_out[0];
  SAY(cudaStreamUpdateCaptureDependencies(x.s, &x.node, nullptr, 1,
                                          cudaStreamSetCaptureDependencies));
  SAY(cudaStreamBeginCaptureToGraph(x.body, x.body_graph, nullptr, nullptr, 0, body_mode));
  tiny<<<1, 1, 0, x.body>>>(nullptr);
  if (fork_unjoined) {
    SAY(cudaEventRecord(x.e, x.body));
    SAY(cudaStreamWaitEvent(x.side, x.e, 0));
    tiny<<<1, 1, 0, x.side>>>(nullptr);
  }
  std::printf("  body graph %p, parent %p\n", static_cast<void*>(x.body_graph),
              static_cast<void*>(x.parent));
  return x;
}

static void count_nodes(const char* name, cudaGraph_t g) {
  std::size_t n = 0;
  const cudaError_t e = cudaGraphGetNodes(g, nullptr, &n);
  std::printf("  nodes of %s: %zu (%s)\n", name, n, cudaGetErrorName(e));
  static_cast<void>(cudaGetLastError());
}

// Case A: what graphcap did: end the body (unjoined), end the parent, destroy the parent.
static void case_graphcap_order() {
  setup x = open_body(true, cudaGraphCondTypeWhile);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  std::printf("  ended body -> %p\n", static_cast<void*>(ended));
  capturing("body", x.body);
  capturing("side", x.side);
  capturing("s", x.s);
  count_nodes("body graph", x.body_graph);
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  ended parent -> %p\n", static_cast<void*>(parent));
  capturing("side", x.side);
  if (parent != nullptr) {
    std::printf("  destroying the parent...\n");
    std::fflush(stdout);
    SAY(cudaGraphDestroy(parent));
  }
  capturing("side", x.side);
  SAY(cudaStreamDestroy(x.side));
}

// Case B: join the side stream before ending the body (what graphcap cannot do: it does not know
// the side stream), for contrast.
static void case_joined() {
  setup x = open_body(true, cudaGraphCondTypeWhile);
  cudaEvent_t back{};
  cudaEventCreateWithFlags(&back, cudaEventDisableTiming);
  SAY(cudaEventRecord(back, x.side));
  SAY(cudaStreamWaitEvent(x.body, back, 0));
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaGraphDestroy(parent));
  capturing("side", x.side);
}

// Case C: end the parent first while the body capture (and its fork) still runs.
static void case_parent_first() {
  setup x = open_body(true, cudaGraphCondTypeWhile);
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  ended parent -> %p\n", static_cast<void*>(parent));
  capturing("body", x.body);
  capturing("side", x.side);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  std::printf("  ended body -> %p\n", static_cast<void*>(ended));
  if (parent != nullptr) {
    std::printf("  destroying the parent...\n");
    std::fflush(stdout);
    SAY(cudaGraphDestroy(parent));
  }
}

// Case D: after the unjoined end, remove the conditional node from the parent before the parent
// is destroyed.
static void case_destroy_node_first() {
  setup x = open_body(true, cudaGraphCondTypeWhile);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  destroying the conditional node...\n");
  std::fflush(stdout);
  SAY(cudaGraphDestroyNode(x.node));
  std::printf("  destroying the parent...\n");
  std::fflush(stdout);
  SAY(cudaGraphDestroy(parent));
}

// Case E: the body ended with no fork (the ordinary abandon), then the parent destroyed.
static void case_no_fork() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaGraphDestroy(parent));
}

// Case F: invalidate the body's capture on purpose first (a capture-unsafe call in global mode),
// then end it, then the parent.
static void case_invalidate_first() {
  setup x = open_body(true, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body)); // invalidates the capture sequence
  capturing("body", x.body);
  capturing("side", x.side);
  capturing("s", x.s);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  capturing("side", x.side);
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  ended parent -> %p\n", static_cast<void*>(parent));
  if (parent != nullptr) {
    std::fflush(stdout);
    SAY(cudaGraphDestroy(parent));
  }
}

// Case G: top-level capture (no body) with an unjoined fork: what the end returns, and the side.
static void case_top_level() {
  cudaStream_t s{}, side{};
  cudaEvent_t e{};
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  SAY(cudaEventRecord(e, s));
  SAY(cudaStreamWaitEvent(side, e, 0));
  tiny<<<1, 1, 0, side>>>(nullptr);
  cudaGraph_t g = nullptr;
  SAY(cudaStreamEndCapture(s, &g));
  std::printf("  ended -> %p\n", static_cast<void*>(g));
  capturing("side", side);
  capturing("s", s);
}

// Case H: a memcpy to pageable host memory inside a WHILE body: what the capture and the
// instantiation say, and what the node's parameters and the pointer attributes show.
static void case_pageable_in_body(bool pinned) {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  int* device = nullptr;
  {
    cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&relaxed);
    cudaMalloc(&device, 64);
    cudaThreadExchangeStreamCaptureMode(&relaxed);
  }
  int* host = pinned ? nullptr : static_cast<int*>(std::malloc(64));
  if (pinned) {
    cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&relaxed);
    SAY(cudaMallocHost(&host, 64));
    cudaThreadExchangeStreamCaptureMode(&relaxed);
  }
  SAY(cudaMemcpyAsync(host, device, 4, cudaMemcpyDeviceToHost, x.body));
  SAY(cudaMemcpyAsync(device, host, 4, cudaMemcpyHostToDevice, x.body));
  SAY(cudaMemcpyAsync(host, device, 4, cudaMemcpyDefault, x.body));
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  std::size_t n = 0;
  cudaGraphGetNodes(x.body_graph, nullptr, &n);
  cudaGraphNode_t nodes[16];
  cudaGraphGetNodes(x.body_graph, nodes, &n);
  for (std::size_t i = 0; i < n; ++i) {
    cudaGraphNodeType type{};
    cudaGraphNodeGetType(nodes[i], &type);
    if (type != cudaGraphNodeTypeMemcpy) {
      continue;
    }
    cudaMemcpy3DParms p{};
    const cudaError_t e = cudaGraphMemcpyNodeGetParams(nodes[i], &p);
    std::printf("  memcpy node: %s src %p dst %p kind %d extent %zu\n", cudaGetErrorName(e),
                p.srcPtr.ptr, p.dstPtr.ptr, static_cast<int>(p.kind), p.extent.width);
    cudaPointerAttributes a{};
    const cudaError_t e3 = cudaPointerGetAttributes(&a, host);
    std::printf("  host pointer attributes: %s type %d\n", cudaGetErrorName(e3),
                static_cast<int>(a.type));
    static_cast<void>(cudaGetLastError());
  }
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  cudaGraphExec_t exec = nullptr;
  cudaGraphInstantiateParams ip{};
  SAY(cudaGraphInstantiateWithParams(&exec, parent, &ip));
  std::printf("  instantiate result %d, error node %p\n", static_cast<int>(ip.result_out),
              static_cast<void*>(ip.errNode_out));
  SAY(cudaGraphInstantiate(&exec, parent, 0));
  if (exec) {
    SAY(cudaGraphExecDestroy(exec));
  }
  SAY(cudaGraphDestroy(parent));
}

// The sinks of `g` (nodes nothing depends on).
static std::size_t sinks(cudaGraph_t g, cudaGraphNode_t* out, std::size_t cap) {
  std::size_t n = 0;
  cudaGraphGetNodes(g, nullptr, &n);
  cudaGraphNode_t nodes[64];
  cudaGraphGetNodes(g, nodes, &n);
  std::size_t found = 0;
  for (std::size_t i = 0; i < n && found < cap; ++i) {
    std::size_t dependents = 0;
    cudaGraphNodeGetDependentNodes(nodes[i], nullptr, nullptr, &dependents);
    if (dependents == 0) {
      out[found++] = nodes[i];
    }
  }
  return found;
}

// Case I: before ending an unjoined body, make the body stream depend on every sink of the body
// graph (a join graphcap can make without knowing the side stream).
static void case_join_sinks() {
  setup x = open_body(true, cudaGraphCondTypeWhile);
  cudaGraphNode_t leaves[64];
  const std::size_t n = sinks(x.body_graph, leaves, 64);
  std::printf("  %zu sinks\n", n);
  SAY(cudaStreamUpdateCaptureDependencies(x.body, leaves, nullptr, n,
                                          cudaStreamSetCaptureDependencies));
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  std::printf("  ended body -> %p\n", static_cast<void*>(ended));
  capturing("side", x.side);
  count_nodes("body graph", x.body_graph);
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaGraphDestroy(parent));
  // The side stream is usable outside a capture again.
  tiny<<<1, 1, 0, x.side>>>(nullptr);
  SAY(cudaStreamSynchronize(x.side));
}

// Case I2: the side stream only waited (no work of its own after the fork), then the body ends.
static void case_wait_only() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaEventRecord(x.e, x.body));
  SAY(cudaStreamWaitEvent(x.side, x.e, 0));
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  capturing("side", x.side);
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaGraphDestroy(parent));
}

// Case J: an invalidated body: end and destroy the parent while the body capture still runs.
static void case_invalid_destroy_parent_first() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::fflush(stdout);
  SAY(cudaGraphDestroy(parent));
  capturing("body", x.body);
  cudaGraph_t ended = nullptr;
  std::fflush(stdout);
  SAY(cudaStreamEndCapture(x.body, &ended));
  capturing("body", x.body);
}

// Case K: an invalidated body: destroy the conditional node while the body capture still runs.
static void case_invalid_destroy_node() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body));
  std::fflush(stdout);
  SAY(cudaGraphDestroyNode(x.node));
  cudaGraph_t ended = nullptr;
  std::fflush(stdout);
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::fflush(stdout);
  if (parent)
    SAY(cudaGraphDestroy(parent));
}

// Case L: cudaMalloc in global mode during the body's capture: which captures are invalidated,
// and is the teardown safe.
static void case_global_malloc() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  void* p = nullptr;
  SAY(cudaMalloc(&p, 64));
  capturing("body", x.body);
  capturing("s", x.s);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  ended parent -> %p\n", static_cast<void*>(parent));
  std::fflush(stdout);
  if (parent)
    SAY(cudaGraphDestroy(parent));
}

// Case M: an invalidated body whose parent is then invalidated too, before either ends.
static void case_invalidate_parent_too() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body));
  SAY(cudaStreamSynchronize(x.s));
  capturing("s", x.s);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  std::fflush(stdout);
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  ended parent -> %p\n", static_cast<void*>(parent));
}

// Case M2: the parent invalidated first, the body still valid; parent ended (fails), then body.
static void case_parent_invalid_body_valid() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.s));
  capturing("s", x.s);
  capturing("body", x.body);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  std::fflush(stdout);
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  ended parent -> %p\n", static_cast<void*>(parent));
}

// Case N: an invalidated body captured into a graph graphcap made (cudaGraphCreate) instead of
// the node's body: does a failed end destroy a graph the caller made?
static void case_own_graph() {
  cudaStream_t st{};
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  cudaGraph_t g{};
  cudaGraphCreate(&g, 0);
  SAY(cudaStreamBeginCaptureToGraph(st, g, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
  tiny<<<1, 1, 0, st>>>(nullptr);
  SAY(cudaStreamSynchronize(st));
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(st, &ended));
  count_nodes("own graph", g);
  std::fflush(stdout);
  SAY(cudaGraphDestroy(g));
}

// Case M3: body and parent invalidated; the parent ended first, then the body.
static void case_both_invalid_parent_first() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body));
  SAY(cudaStreamSynchronize(x.s));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  capturing("body", x.body);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
}

// Case M4: body and parent invalidated; the parent ended first; the body's stream destroyed
// without ending its capture.
static void case_both_invalid_destroy_stream() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body));
  SAY(cudaStreamSynchronize(x.s));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaStreamDestroy(x.body));
  SAY(cudaDeviceSynchronize());
}

__global__ void count_up(int* counter, cudaGraphConditionalHandle more, int limit) {
  const int now = ++*counter;
  cudaGraphSetConditional(more, now < limit ? 1U : 0U);
}

// Case P: a body captured into a graph of its own (cudaGraphCreate), holding a nested WHILE, then
// moved into the node's body as a child graph (ownership moved). Does it instantiate and run, and
// does a failed capture into such a graph leave the node's body intact?
static void case_moved_child(bool fail) {
  int* counter = nullptr;
  cudaMalloc(&counter, sizeof(int));
  cudaMemset(counter, 0, sizeof(int));
  setup x;
  cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&x.body, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&x.inner, cudaStreamNonBlocking);
  SAY(cudaStreamBeginCapture(x.s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status{};
  const cudaGraphNode_t* deps = nullptr;
  std::size_t count = 0;
  cudaStreamGetCaptureInfo(x.s, &status, nullptr, &x.parent, &deps, nullptr, &count);
  cudaGraphConditionalHandleCreate(&x.handle, x.parent, 1, cudaGraphCondAssignDefault);
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = x.handle;
  params.conditional.type = cudaGraphCondTypeIf;
  params.conditional.size = 1;
  SAY(cudaGraphAddNode(&x.node, x.parent, deps, nullptr, count, &params));
  x.body_graph = params.conditional.phGraph_out[0];
  cudaStreamUpdateCaptureDependencies(x.s, &x.node, nullptr, 1, cudaStreamSetCaptureDependencies);
  // The body's work goes into a graph of graphcap's own.
  cudaGraph_t own{};
  cudaGraphCreate(&own, 0);
  SAY(cudaStreamBeginCaptureToGraph(x.body, own, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
  cudaGraph_t g{};
  cudaStreamGetCaptureInfo(x.body, &status, nullptr, &g, &deps, nullptr, &count);
  cudaGraphConditionalHandle more{};
  SAY(cudaGraphConditionalHandleCreate(&more, g, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams inner{};
  inner.type = cudaGraphNodeTypeConditional;
  inner.conditional.handle = more;
  inner.conditional.type = cudaGraphCondTypeWhile;
  inner.conditional.size = 1;
  cudaGraphNode_t while_node{};
  SAY(cudaGraphAddNode(&while_node, g, deps, nullptr, count, &inner));
  cudaGraph_t while_body = inner.conditional.phGraph_out[0];
  cudaStreamUpdateCaptureDependencies(x.body, &while_node, nullptr, 1,
                                      cudaStreamSetCaptureDependencies);
  SAY(cudaStreamBeginCaptureToGraph(x.inner, while_body, nullptr, nullptr, 0,
                                    cudaStreamCaptureModeGlobal));
  count_up<<<1, 1, 0, x.inner>>>(counter, more, 5);
  cudaGraph_t ended{};
  SAY(cudaStreamEndCapture(x.inner, &ended));
  if (fail) {
    SAY(cudaStreamSynchronize(x.body));
  }
  SAY(cudaStreamEndCapture(x.body, &ended));
  if (!fail) {
    cudaGraphNodeParams child{};
    child.type = cudaGraphNodeTypeGraph;
    child.graph.graph = own;
    child.graph.ownership = cudaGraphChildGraphOwnershipMove;
    cudaGraphNode_t child_node{};
    SAY(cudaGraphAddNode(&child_node, x.body_graph, nullptr, nullptr, 0, &child));
  }
  cudaGraph_t parent{};
  SAY(cudaStreamEndCapture(x.s, &parent));
  cudaGraphExec_t exec{};
  SAY(cudaGraphInstantiate(&exec, parent, 0));
  if (exec) {
    SAY(cudaGraphLaunch(exec, x.s));
    SAY(cudaStreamSynchronize(x.s));
    int value = 0;
    cudaMemcpy(&value, counter, sizeof value, cudaMemcpyDeviceToHost);
    std::printf("  counter after one launch: %d (5 expected without the failure)\n", value);
    SAY(cudaGraphExecDestroy(exec));
  }
  std::fflush(stdout);
  SAY(cudaGraphDestroy(parent));
}

// Case R: the body captured in relaxed mode under a global parent; a capture-unsafe call inside.
static void case_relaxed_body(bool device_sync) {
  setup x = open_body(false, cudaGraphCondTypeWhile, cudaStreamCaptureModeRelaxed);
  void* p = nullptr;
  if (device_sync) {
    SAY(cudaDeviceSynchronize());
  } else {
    SAY(cudaMalloc(&p, 64));
  }
  capturing("body", x.body);
  capturing("s", x.s);
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  std::printf("  ended parent -> %p\n", static_cast<void*>(parent));
  if (parent)
    SAY(cudaGraphDestroy(parent));
  SAY(cudaStreamBeginCapture(x.s, cudaStreamCaptureModeGlobal));
  tiny<<<1, 1, 0, x.s>>>(nullptr);
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaGraphDestroy(parent));
}

// Case M5: body and parent invalidated; the parent ended first; the body's stream never touched
// again (leaked); then ordinary work and a normal exit.
static void case_both_invalid_leak_stream() {
  setup x = open_body(false, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body));
  SAY(cudaStreamSynchronize(x.s));
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaStreamBeginCapture(x.s, cudaStreamCaptureModeGlobal));
  tiny<<<1, 1, 0, x.s>>>(nullptr);
  SAY(cudaStreamEndCapture(x.s, &parent));
  cudaGraphExec_t exec{};
  SAY(cudaGraphInstantiate(&exec, parent, 0));
  SAY(cudaGraphLaunch(exec, x.s));
  SAY(cudaStreamSynchronize(x.s));
  SAY(cudaGraphExecDestroy(exec));
  SAY(cudaGraphDestroy(parent));
}

// Case M6: body invalidated, parent valid; body ended (CUDA destroys its graph), parent ended and
// kept (never destroyed); then ordinary work and a normal exit.
static void case_body_invalid_leak_parent() {
  setup x = open_body(true, cudaGraphCondTypeWhile);
  SAY(cudaStreamSynchronize(x.body));
  cudaGraph_t ended = nullptr;
  SAY(cudaStreamEndCapture(x.body, &ended));
  capturing("side", x.side);
  cudaGraph_t parent = nullptr;
  SAY(cudaStreamEndCapture(x.s, &parent));
  SAY(cudaStreamBeginCapture(x.s, cudaStreamCaptureModeGlobal));
  tiny<<<1, 1, 0, x.s>>>(nullptr);
  cudaGraph_t again = nullptr;
  SAY(cudaStreamEndCapture(x.s, &again));
  SAY(cudaGraphDestroy(again));
  SAY(cudaStreamDestroy(x.body));
  SAY(cudaStreamDestroy(x.side));
  SAY(cudaDeviceSynchronize());
}

static void run(const char* name, void (*fn)()) {
  std::printf("== %s\n", name);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    fn();
    std::fflush(stdout);
    std::_Exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) {
    std::printf("  CRASHED: signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else {
    std::printf("  exit %d\n", WEXITSTATUS(status));
  }
}

int main() {
  // No CUDA call before the forks: each child initializes its own context.
  run("A: body ended unjoined, parent ended and destroyed (graphcap's order)", case_graphcap_order);
  run("B: side joined before the body ends", case_joined);
  run("C: parent ended first, then the body", case_parent_first);
  run("D: conditional node destroyed before the parent", case_destroy_node_first);
  run("E: body without a fork abandoned", case_no_fork);
  run("F: body capture invalidated first", case_invalidate_first);
  run("G: top-level capture with an unjoined fork", case_top_level);
  run("H1: pageable memcpy in a WHILE body", [] { case_pageable_in_body(false); });
  run("H2: pinned memcpy in a WHILE body", [] { case_pageable_in_body(true); });
  run("I: unjoined body, its stream made to depend on every sink first", case_join_sinks);
  run("I2: the side stream only waited on the body", case_wait_only);
  run("J: invalidated body, parent destroyed before the body ends",
      case_invalid_destroy_parent_first);
  run("K: invalidated body, conditional node destroyed first", case_invalid_destroy_node);
  run("L: cudaMalloc (global mode) during the body", case_global_malloc);
  run("M: body and parent invalidated", case_invalidate_parent_too);
  run("M2: parent invalidated, body valid", case_parent_invalid_body_valid);
  run("N: invalidated capture into a graph the caller made", case_own_graph);
  run("M3: body and parent invalidated, parent ended first", case_both_invalid_parent_first);
  run("M4: body and parent invalidated, body stream destroyed", case_both_invalid_destroy_stream);
  run("P1: body in a graph of its own, moved in as a child graph", [] { case_moved_child(false); });
  run("P2: the same, the body's capture invalidated", [] { case_moved_child(true); });
  run("R1: relaxed body under a global parent, cudaMalloc inside",
      [] { case_relaxed_body(false); });
  run("R2: relaxed body, cudaDeviceSynchronize inside", [] { case_relaxed_body(true); });
  run("M5: both invalidated, parent ended first, body stream left alone",
      case_both_invalid_leak_stream);
  run("M6: body invalidated, parent ended and never destroyed", case_body_invalid_leak_parent);
  return 0;
}
