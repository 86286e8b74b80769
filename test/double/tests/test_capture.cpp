// Stream capture rules.
#include <algorithm>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

void append(void* data) {
  static_cast<std::vector<int>*>(data)->push_back(
      static_cast<int>(static_cast<std::vector<int>*>(data)->size()));
}

// Runs `f` on a second thread and returns its result.
template <class F>
cudaError_t on_other_thread(F f) {
  cudaError_t r = cudaErrorUnknown;
  std::thread t([&] { r = f(); });
  t.join();
  return r;
}

cudaStreamCaptureStatus status_of(cudaStream_t s) {
  cudaStreamCaptureStatus st{};
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  return st;
}

} // namespace

TEST_CASE("captured memset, memcpy and host function replay with correct data", "[capture]") {
  Clean clean;
  cudaStream_t s = make_stream();
  auto* dev = static_cast<unsigned char*>(device_alloc(64));
  unsigned char host[64] = {};
  std::vector<int> calls;

  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(dev, 0x5A, 64, s));
  CUDA_OK(cudaMemcpyAsync(host, dev, 64, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaLaunchHostFunc(s, append, &calls));
  // Nothing ran during capture.
  CHECK(host[0] == 0);
  CHECK(calls.empty());
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  REQUIRE(g != nullptr);

  const auto nodes = graph_nodes(g);
  REQUIRE(nodes.size() == 3);
  CHECK(type_of(nodes[0]) == cudaGraphNodeTypeMemset);
  CHECK(type_of(nodes[1]) == cudaGraphNodeTypeMemcpy);
  CHECK(type_of(nodes[2]) == cudaGraphNodeTypeHost);
  CHECK(deps_of(nodes[1]) == std::vector<cudaGraphNode_t>{nodes[0]});
  CHECK(deps_of(nodes[2]) == std::vector<cudaGraphNode_t>{nodes[1]});
  cudaMemcpy3DParms cp{};
  CUDA_OK(cudaGraphMemcpyNodeGetParams(nodes[1], &cp));
  CHECK(cp.srcPtr.ptr == dev);
  CHECK(cp.dstPtr.ptr == host);
  CHECK(cp.extent.width == 64);
  CHECK(cp.kind == cudaMemcpyDeviceToHost);
  cudaMemsetParams mp{};
  CUDA_OK(cudaGraphMemsetNodeGetParams(nodes[0], &mp));
  CHECK(mp.dst == dev);
  CHECK(mp.value == 0x5A);
  CHECK(mp.width == 64);

  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CHECK(std::all_of(host, host + 64, [](unsigned char c) { return c == 0x5A; }));
  CHECK(calls == std::vector<int>{0});
  // Replay again with new data: the graph reads memory at replay time.
  CUDA_OK(cudaMemset(dev, 0x11, 64));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CHECK(host[63] == 0x5A); // the memset node rewrote 0x5A before copying
  CHECK(calls == std::vector<int>{0, 1});

  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaStreamDestroy(s));
  CHECK(cuda_double::live_graphs() == 0);
  CHECK(cuda_double::live_execs() == 0);
  CHECK(cuda_double::live_allocations() == 0);
  CHECK(cuda_double::live_streams() == 0);
}

TEST_CASE("fork and join build the runtime's edges", "[capture]") {
  Clean clean;
  cudaStream_t origin = make_stream(), side = make_stream();
  cudaEvent_t fork = make_event(cudaEventDisableTiming), join = make_event(cudaEventDisableTiming);
  auto* a = static_cast<char*>(device_alloc(256));

  CUDA_OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(a, 1, 16, origin)); // A
  CUDA_OK(cudaEventRecord(fork, origin));
  CUDA_OK(cudaStreamWaitEvent(side, fork, 0));
  CHECK(status_of(side) == cudaStreamCaptureStatusActive);
  CUDA_OK(cudaMemsetAsync(a + 16, 2, 16, side));   // B after A
  CUDA_OK(cudaMemsetAsync(a + 32, 3, 16, origin)); // C after A
  CUDA_OK(cudaEventRecord(join, side));
  CUDA_OK(cudaStreamWaitEvent(origin, join, 0));

  // The origin's frontier is now {C, B}.
  cudaStreamCaptureStatus st{};
  unsigned long long id = 0;
  cudaGraph_t capturing = nullptr;
  const cudaGraphNode_t* frontier = nullptr;
  std::size_t n = 0;
  CUDA_OK(cudaStreamGetCaptureInfo(origin, &st, &id, &capturing, &frontier, nullptr, &n));
  CHECK(st == cudaStreamCaptureStatusActive);
  CHECK(id != 0);
  REQUIRE(n == 2);
  const auto nodes_now = graph_nodes(capturing);
  REQUIRE(nodes_now.size() == 3);
  CHECK(frontier[0] == nodes_now[2]);
  CHECK(frontier[1] == nodes_now[1]);

  CUDA_OK(cudaMemsetAsync(a + 48, 4, 16, origin)); // D after {C, B}
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(origin, &g));
  CHECK(g == capturing);
  CHECK(status_of(side) == cudaStreamCaptureStatusNone);

  const auto nodes = graph_nodes(g);
  REQUIRE(nodes.size() == 4);
  CHECK(deps_of(nodes[0]).empty());
  CHECK(deps_of(nodes[1]) == std::vector<cudaGraphNode_t>{nodes[0]});
  CHECK(deps_of(nodes[2]) == std::vector<cudaGraphNode_t>{nodes[0]});
  CHECK(deps_of(nodes[3]) == std::vector<cudaGraphNode_t>{nodes[2], nodes[1]});

  std::size_t edges = 0;
  CUDA_OK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
  CHECK(edges == 4);
  std::size_t roots = 0;
  CUDA_OK(cudaGraphGetRootNodes(g, nullptr, &roots));
  CHECK(roots == 1);
  CUDA_OK(cudaGraphDestroy(g));
}

TEST_CASE("unjoined fork fails the capture", "[capture]") {
  Clean clean;
  cudaStream_t origin = make_stream(), side = make_stream();
  cudaEvent_t fork = make_event();
  auto* a = device_alloc(64);
  CUDA_OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaEventRecord(fork, origin));
  CUDA_OK(cudaStreamWaitEvent(side, fork, 0));
  CUDA_OK(cudaMemsetAsync(a, 0, 64, side));
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(0x1);
  CHECK(cudaStreamEndCapture(origin, &g) == cudaErrorStreamCaptureUnjoined);
  CHECK(g == nullptr);
  CHECK(status_of(side) == cudaStreamCaptureStatusNone);
  CHECK(status_of(origin) == cudaStreamCaptureStatusNone);
  CHECK(cuda_double::live_graphs() == 0);

  SECTION("a side stream that joined without work needs no join") {
    CUDA_OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    CUDA_OK(cudaMemsetAsync(a, 0, 64, origin));
    CUDA_OK(cudaEventRecord(fork, origin));
    CUDA_OK(cudaStreamWaitEvent(side, fork, 0));
    CUDA_OK(cudaMemsetAsync(a, 1, 64, origin));
    CUDA_OK(cudaStreamEndCapture(origin, &g));
    CUDA_OK(cudaGraphDestroy(g));
  }
}

TEST_CASE("ending a capture from the wrong stream or thread", "[capture]") {
  Clean clean;
  cudaStream_t origin = make_stream(), side = make_stream();
  cudaEvent_t fork = make_event();
  cudaGraph_t g = nullptr;

  SECTION("not capturing at all") {
    CHECK(cudaStreamEndCapture(origin, &g) == cudaErrorIllegalState);
  }
  SECTION("joined stream is not the origin") {
    CUDA_OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    CUDA_OK(cudaEventRecord(fork, origin));
    CUDA_OK(cudaStreamWaitEvent(side, fork, 0));
    CHECK(cudaStreamEndCapture(side, &g) == cudaErrorStreamCaptureUnmatched);
    CHECK(cudaStreamEndCapture(origin, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("global and thread-local captures belong to their thread") {
    const auto mode = GENERATE(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal);
    CUDA_OK(cudaStreamBeginCapture(origin, mode));
    CHECK(on_other_thread([&] { return cudaStreamEndCapture(origin, &g); }) ==
          cudaErrorStreamCaptureWrongThread);
    CHECK(status_of(origin) == cudaStreamCaptureStatusActive);
    CUDA_OK(cudaStreamEndCapture(origin, &g));
    CUDA_OK(cudaGraphDestroy(g));
  }
  SECTION("relaxed captures may end anywhere") {
    CUDA_OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed));
    CUDA_OK(on_other_thread([&] { return cudaStreamEndCapture(origin, &g); }));
    CUDA_OK(cudaGraphDestroy(g));
  }
}

TEST_CASE("the legacy stream cannot be captured but the per-thread stream can", "[capture]") {
  Clean clean;
  CHECK(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal) ==
        cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal) ==
        cudaErrorStreamCaptureUnsupported);
  CUDA_OK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal));
  CHECK(status_of(cudaStreamPerThread) == cudaStreamCaptureStatusActive);
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(cudaStreamPerThread, &g));
  CHECK(graph_nodes(g).empty());
  CUDA_OK(cudaGraphDestroy(g));
  CHECK(cudaStreamBeginCapture(make_stream(), static_cast<cudaStreamCaptureMode>(3)) ==
        cudaErrorInvalidValue);
}

TEST_CASE("legacy stream work meets a blocking capture", "[capture]") {
  Clean clean;
  auto* dev = device_alloc(64);
  char host[64];
  cudaGraph_t g = nullptr;

  SECTION("blocking capture is invalidated") {
    cudaStream_t s = make_stream(cudaStreamDefault);
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    cudaStreamCaptureStatus st{};
    // Queries only report the problem.
    CHECK(cudaStreamIsCapturing(cudaStreamLegacy, &st) == cudaErrorStreamCaptureImplicit);
    CHECK(status_of(s) == cudaStreamCaptureStatusActive);
    CHECK(cudaMemcpyAsync(host, dev, 64, cudaMemcpyDeviceToHost, nullptr) ==
          cudaErrorStreamCaptureImplicit);
    CHECK(status_of(s) == cudaStreamCaptureStatusInvalidated);
    CHECK(cudaMemsetAsync(dev, 0, 64, s) == cudaErrorStreamCaptureInvalidated);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
    CHECK(g == nullptr);
  }
  SECTION("host function on the legacy stream") {
    cudaStream_t s = make_stream(cudaStreamDefault);
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaLaunchHostFunc(nullptr, append, nullptr) == cudaErrorStreamCaptureImplicit);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("non-blocking capture is unaffected") {
    cudaStream_t s = make_stream(cudaStreamNonBlocking);
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CUDA_OK(cudaMemcpyAsync(host, dev, 64, cudaMemcpyDeviceToHost, nullptr));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphDestroy(g));
  }
}

TEST_CASE("unsafe calls during a global capture", "[capture][modes]") {
  Clean clean;
  cudaStream_t s = make_stream();
  cudaStream_t other = make_stream();
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));

  SECTION("cudaMalloc on the capturing thread") {
    void* p = nullptr;
    CHECK(cudaMalloc(&p, 16) == cudaErrorStreamCaptureUnsupported);
    CHECK(status_of(s) == cudaStreamCaptureStatusInvalidated);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("cudaMalloc on another thread") {
    void* p = nullptr;
    CHECK(on_other_thread([&] { return cudaMalloc(&p, 16); }) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("cudaMalloc under relaxed thread mode succeeds") {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == cudaStreamCaptureModeGlobal);
    void* p = nullptr;
    CUDA_OK(cudaMalloc(&p, 16));
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == cudaStreamCaptureModeRelaxed);
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphDestroy(g));
    CUDA_OK(cudaFree(p));
  }
  SECTION("another thread's synchronizing calls") {
    cudaEvent_t ev = make_event();
    cudaGraphExec_t exec = nullptr;
    cudaGraph_t empty = make_graph();
    int which = GENERATE(0, 1, 2, 3);
    CHECK(on_other_thread([&] {
            switch (which) {
            case 0:
              return cudaStreamSynchronize(other);
            case 1:
              return cudaStreamQuery(other);
            case 2:
              return cudaEventSynchronize(ev);
            default:
              return cudaGraphInstantiate(&exec, empty, 0);
            }
          }) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
    // The same calls are fine once no capture is running.
    CUDA_OK(cudaStreamSynchronize(other));
    CUDA_OK(cudaGraphInstantiate(&exec, empty, 0));
    CUDA_OK(cudaGraphExecDestroy(exec));
  }
  SECTION("another thread in relaxed mode is not prohibited") {
    CUDA_OK(on_other_thread([&] {
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&mode);
      return cudaStreamSynchronize(other);
    }));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphDestroy(g));
  }
  SECTION("cudaDeviceSynchronize fails even in relaxed mode") {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK(cudaDeviceSynchronize() == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  }
}

TEST_CASE("thread-local and relaxed captures", "[capture][modes]") {
  Clean clean;
  cudaStream_t s = make_stream(), other = make_stream();
  cudaGraph_t g = nullptr;
  void* p = nullptr;

  SECTION("thread-local: other threads are free, the capturing thread is not") {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(on_other_thread([&] { return cudaMalloc(&p, 16); }));
    CUDA_OK(on_other_thread([&] { return cudaStreamSynchronize(other); }));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphDestroy(g));
    CUDA_OK(cudaFree(p));

    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMalloc(&p, 16) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("relaxed: nobody is prohibited") {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CUDA_OK(cudaMalloc(&p, 16));
    CUDA_OK(on_other_thread([&] { return cudaStreamSynchronize(other); }));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphDestroy(g));
    CUDA_OK(cudaFree(p));
  }
  SECTION("synchronizing the capturing stream is always illegal") {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
}

TEST_CASE("the capture mode rule ignores the current device", "[capture][modes][devices]") {
  // CUDA documents the prohibition by thread and mode only (cudaThreadExchangeStreamCaptureMode):
  // a capture of a stream of device 0 prohibits unsafe calls made with device 1 current too. Not
  // yet checked on the H200 (one device): benchmark/probes/capture_unsafe_devices.cu.
  Clean clean;
  cuda_double::set_device_count(2);
  cudaStream_t s = make_stream(); // device 0
  cudaGraph_t g = nullptr;
  void* p = nullptr;
  const auto on_device_one = [&] {
    if (cudaError_t e = cudaSetDevice(1))
      return e;
    return cudaMalloc(&p, 16);
  };

  SECTION("global capture, the capturing thread on another device") {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(on_device_one() == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("global capture, another thread on another device") {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(on_other_thread(on_device_one) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("thread-local capture: the capturing thread on another device") {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(on_other_thread(on_device_one));
    CUDA_OK(on_other_thread([&] { return cudaFree(p); }));
    CHECK(on_device_one() == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  CUDA_OK(cudaSetDevice(0));
}

TEST_CASE("cross-capture waits", "[capture]") {
  Clean clean;
  cudaStream_t s1 = make_stream(), s2 = make_stream();
  cudaEvent_t ev = make_event();
  cudaGraph_t g = nullptr;

  SECTION("waiting on uncaptured work is an isolation error") {
    CUDA_OK(cudaEventRecord(ev, s2));
    CUDA_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CHECK(cudaStreamWaitEvent(s1, ev, 0) == cudaErrorStreamCaptureIsolation);
    CHECK(cudaStreamEndCapture(s1, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("an external wait becomes a wait node") {
    CUDA_OK(cudaEventRecord(ev, s2));
    CUDA_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CUDA_OK(cudaStreamWaitEvent(s1, ev, cudaEventWaitExternal));
    CUDA_OK(cudaEventRecordWithFlags(ev, s1, cudaEventRecordExternal));
    CUDA_OK(cudaStreamEndCapture(s1, &g));
    const auto nodes = graph_nodes(g);
    REQUIRE(nodes.size() == 2);
    CHECK(type_of(nodes[0]) == cudaGraphNodeTypeWaitEvent);
    CHECK(type_of(nodes[1]) == cudaGraphNodeTypeEventRecord);
    CUDA_OK(cudaGraphDestroy(g));
  }
  SECTION("two captures cannot merge") {
    CUDA_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CUDA_OK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
    CUDA_OK(cudaEventRecord(ev, s1));
    CHECK(cudaStreamWaitEvent(s2, ev, 0) == cudaErrorStreamCaptureMerge);
    CHECK(cudaStreamEndCapture(s2, &g) == cudaErrorStreamCaptureInvalidated);
    CUDA_OK(cudaStreamEndCapture(s1, &g));
    CUDA_OK(cudaGraphDestroy(g));
  }
  SECTION("a captured event cannot be waited on by the host") {
    CUDA_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
    CUDA_OK(cudaEventRecord(ev, s1));
    CHECK(cudaEventQuery(ev) == cudaErrorCapturedEvent);
    CUDA_OK(cudaStreamEndCapture(s1, &g));
    CUDA_OK(cudaGraphDestroy(g));
  }
}

TEST_CASE("capture dependencies can be replaced", "[capture]") {
  Clean clean;
  cudaStream_t s = make_stream();
  auto* dev = static_cast<char*>(device_alloc(64));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(dev, 0, 8, s));
  CUDA_OK(cudaMemsetAsync(dev + 8, 0, 8, s));
  cudaStreamCaptureStatus st{};
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamGetCaptureInfo(s, &st, nullptr, &g));
  const auto first = graph_nodes(g).at(0);
  cudaGraphNode_t deps[] = {first};
  CUDA_OK(
      cudaStreamUpdateCaptureDependencies(s, deps, nullptr, 1, cudaStreamSetCaptureDependencies));
  CUDA_OK(cudaMemsetAsync(dev + 16, 0, 8, s));
  CHECK(cudaStreamUpdateCaptureDependencies(s, deps, nullptr, 1, 7) == cudaErrorInvalidValue);
  CUDA_OK(cudaStreamEndCapture(s, &g));
  const auto nodes = graph_nodes(g);
  REQUIRE(nodes.size() == 3);
  CHECK(deps_of(nodes[2]) == std::vector<cudaGraphNode_t>{nodes[0]});
  std::size_t roots = 0;
  CUDA_OK(cudaGraphGetRootNodes(g, nullptr, &roots));
  CHECK(roots == 1);
  CUDA_OK(cudaGraphDestroy(g));
  CHECK(cudaStreamUpdateCaptureDependencies(s, deps, nullptr, 1, 0) == cudaErrorIllegalState);
}

TEST_CASE("launching a graph into a capture embeds it as a child graph", "[capture]") {
  Clean clean;
  cudaStream_t s = make_stream();
  std::vector<int> calls;
  cudaGraph_t inner = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaLaunchHostFunc(s, append, &calls));
  CUDA_OK(cudaStreamEndCapture(s, &inner));
  cudaGraphExec_t inner_exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&inner_exec, inner, 0));

  cudaGraph_t outer = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaGraphLaunch(inner_exec, s));
  CUDA_OK(cudaLaunchHostFunc(s, append, &calls));
  CUDA_OK(cudaStreamEndCapture(s, &outer));
  const auto nodes = graph_nodes(outer);
  REQUIRE(nodes.size() == 2);
  CHECK(type_of(nodes[0]) == cudaGraphNodeTypeGraph);
  CHECK(calls.empty());
  cudaGraphExec_t outer_exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&outer_exec, outer, 0));
  CUDA_OK(cudaGraphLaunch(outer_exec, s));
  CHECK(calls == std::vector<int>{0, 1});
}

TEST_CASE("capturing into an existing graph", "[capture]") {
  Clean clean;
  cudaStream_t s = make_stream();
  cudaGraph_t g = make_graph();
  cudaGraphNode_t root = nullptr;
  CUDA_OK(cudaGraphAddEmptyNode(&root, g, nullptr, 0));
  std::vector<int> calls;
  CUDA_OK(cudaStreamBeginCaptureToGraph(s, g, &root, nullptr, 1, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaLaunchHostFunc(s, append, &calls));
  cudaGraph_t out = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &out));
  CHECK(out == g);
  const auto nodes = graph_nodes(g);
  REQUIRE(nodes.size() == 2);
  CHECK(deps_of(nodes[1]) == std::vector<cudaGraphNode_t>{root});
}

namespace {
void count_launches(void* out) {
  *static_cast<std::size_t*>(out) = cuda_double::calls("cudaGraphLaunch");
}
} // namespace

TEST_CASE("host nodes may use the control API", "[capture]") {
  Clean clean;
  cudaStream_t s = make_stream();
  std::size_t seen = 0;
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaLaunchHostFunc(s, count_launches, &seen));
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t x = nullptr;
  CUDA_OK(cudaGraphInstantiate(&x, g, 0));
  CUDA_OK(cudaGraphLaunch(x, s));
  CHECK(seen == 1);
}
