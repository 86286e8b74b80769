// Memory: registry, buffer ids, pools and graph memory nodes.
#include <cuda.h>

#include <cstring>
#include <vector>

#include "helpers.hpp"

namespace {

using PointerGetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);

PointerGetAttribute pointer_get_attribute() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUDA_OK(
      cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &fn, 12000, cudaEnableDefault, &q));
  REQUIRE(q == cudaDriverEntryPointSuccess);
  return reinterpret_cast<PointerGetAttribute>(fn);
}

unsigned long long buffer_id(void* p, CUresult expect = CUDA_SUCCESS) {
  unsigned long long id = 0;
  CHECK(pointer_get_attribute()(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                reinterpret_cast<CUdeviceptr>(p)) == expect);
  return id;
}

unsigned long long pool_attr(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  unsigned long long v = 0;
  CUDA_OK(cudaMemPoolGetAttribute(pool, attr, &v));
  return v;
}

} // namespace

TEST_CASE("buffer ids are unique per allocation, also on address reuse", "[memory]") {
  Clean clean;
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreate(&s));
  void* a = nullptr;
  CUDA_OK(cudaMallocAsync(&a, 1000, s));
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 256 == 0);
  const auto id_a = buffer_id(a);
  CHECK(id_a != 0);
  // Interior pointers belong to the same buffer.
  CHECK(buffer_id(static_cast<char*>(a) + 999) == id_a);
  buffer_id(static_cast<char*>(a) + 1000, CUDA_ERROR_INVALID_VALUE);

  CUDA_OK(cudaFreeAsync(a, s));
  buffer_id(a, CUDA_ERROR_INVALID_VALUE);
  void* b = nullptr;
  CUDA_OK(cudaMallocAsync(&b, 1000, s));
  CHECK(b == a); // the pool reuses the block
  CHECK(buffer_id(b) != id_a);

  void* c = device_alloc(16);
  int ordinal = -1;
  unsigned type = 0;
  auto get = pointer_get_attribute();
  CHECK(get(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, reinterpret_cast<CUdeviceptr>(c)) ==
        CUDA_SUCCESS);
  CHECK(ordinal == 0);
  CHECK(get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(c)) ==
        CUDA_SUCCESS);
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  int on_stack = 0;
  CHECK(get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(&on_stack)) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuda_double::calls("cuPointerGetAttribute") == 8);
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(c));
  CHECK(cuda_double::live_allocations() == 0);
}

TEST_CASE("pointer attributes", "[memory]") {
  Clean clean;
  void* d = device_alloc(64);
  void* h = nullptr;
  CUDA_OK(cudaMallocHost(&h, 64));
  int plain = 0;
  cudaPointerAttributes attr{};
  CUDA_OK(cudaPointerGetAttributes(&attr, d));
  CHECK(attr.type == cudaMemoryTypeDevice);
  CHECK(attr.devicePointer == d);
  CUDA_OK(cudaPointerGetAttributes(&attr, h));
  CHECK(attr.type == cudaMemoryTypeHost);
  CHECK(attr.hostPointer == h);
  CUDA_OK(cudaPointerGetAttributes(&attr, &plain));
  CHECK(attr.type == cudaMemoryTypeUnregistered);
  CHECK(cudaFree(h) == cudaErrorInvalidValue);
  CHECK(cudaFreeHost(d) == cudaErrorInvalidValue);
  CUDA_OK(cudaFreeHost(h));
  CUDA_OK(cudaFree(d));
  CHECK(cudaFree(d) == cudaErrorInvalidValue); // double free
}

TEST_CASE("copies and sets check their device operands", "[memory]") {
  Clean clean;
  auto* d = static_cast<unsigned char*>(device_alloc(64));
  unsigned char h[64];
  CUDA_OK(cudaMemset(d, 0xAB, 64));
  CUDA_OK(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost));
  CHECK(h[0] == 0xAB);
  CHECK(h[63] == 0xAB);
  CHECK(cudaMemset(d, 0, 65) == cudaErrorInvalidValue);
  CHECK(cudaMemset(h, 0, 8) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(h, h + 8, 8, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(h, d, 8, static_cast<cudaMemcpyKind>(7)) == cudaErrorInvalidMemcpyDirection);
  CUDA_OK(cudaMemcpy(h, h + 8, 8, cudaMemcpyHostToHost));
  CUDA_OK(cudaMemcpy(d + 8, h, 8, cudaMemcpyDefault));
  std::size_t free = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free, &total));
  CHECK(total - free == 256);
}

TEST_CASE("stream-ordered pool statistics", "[memory]") {
  Clean clean;
  cudaMemPool_t pool = nullptr;
  CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
  void* a = nullptr;
  CUDA_OK(cudaMallocAsync(&a, 512, nullptr));
  CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent) == 512);
  CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == 512);
  CUDA_OK(cudaFreeAsync(a, nullptr));
  CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0);
  CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemHigh) == 512);
  CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == 512); // cached
  CUDA_OK(cudaMemPoolTrimTo(pool, 0));
  CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == 0);

  // With the default release threshold (0) a synchronization releases
  // cached memory; a higher threshold keeps it.
  unsigned long long keep = 1 << 20;
  CUDA_OK(cudaMallocAsync(&a, 512, nullptr));
  CUDA_OK(cudaFreeAsync(a, nullptr));
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  CUDA_OK(cudaStreamSynchronize(nullptr));
  CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == 512);
  keep = 0;
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  CUDA_OK(cudaDeviceSynchronize());
  CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == 0);
  unsigned long long bogus = 5;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &bogus) == cudaErrorInvalidValue);

  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t mine = nullptr;
  CUDA_OK(cudaMemPoolCreate(&mine, &props));
  CUDA_OK(cudaMallocFromPoolAsync(&a, 100, mine, nullptr));
  CHECK(pool_attr(mine, cudaMemPoolAttrUsedMemCurrent) == 256);
  CHECK(cudaMemPoolDestroy(pool) == cudaErrorInvalidValue); // default pool
  CUDA_OK(cudaMemPoolDestroy(mine));
  CUDA_OK(cudaFreeAsync(a, nullptr)); // outstanding allocation outlives the pool
  CHECK(cuda_double::live_allocations() == 0);
}

TEST_CASE("graph memory nodes", "[memory][graph]") {
  Clean clean;
  cudaStream_t s = make_stream();
  unsigned char host[32] = {};
  void* p = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMallocAsync(&p, 32, s));
  REQUIRE(p != nullptr);
  CUDA_OK(cudaMemsetAsync(p, 9, 32, s));
  CUDA_OK(cudaMemcpyAsync(host, p, 32, cudaMemcpyDeviceToHost, s));
  cudaGraph_t g = nullptr;

  SECTION("allocated and freed inside the graph") {
    CUDA_OK(cudaFreeAsync(p, s));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    const auto nodes = graph_nodes(g);
    REQUIRE(nodes.size() == 4);
    CHECK(type_of(nodes[0]) == cudaGraphNodeTypeMemAlloc);
    CHECK(type_of(nodes[3]) == cudaGraphNodeTypeMemFree);
    cudaMemAllocNodeParams ap{};
    CUDA_OK(cudaGraphMemAllocNodeGetParams(nodes[0], &ap));
    CHECK(ap.dptr == p);
    CHECK(ap.bytesize == 32);
    // Not backed until the graph runs.
    buffer_id(p, CUDA_ERROR_INVALID_VALUE);

    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    CUDA_OK(cudaGraphInstantiate(&e1, g, 0));
    CHECK(cudaGraphInstantiate(&e2, g, 0) == cudaErrorNotSupported);
    cudaGraph_t clone = nullptr;
    CHECK(cudaGraphClone(&clone, g) == cudaErrorNotSupported);
    CUDA_OK(cudaGraphLaunch(e1, s));
    CHECK(host[0] == 9);
    CUDA_OK(cudaGraphLaunch(e1, s));
    CHECK(cuda_double::live_allocations() == 0);
    CUDA_OK(cudaGraphExecDestroy(e1));
    CUDA_OK(cudaGraphInstantiate(&e2, g, 0)); // the slot is free again
    CUDA_OK(cudaGraphExecDestroy(e2));
  }
  SECTION("left allocated: the address is stable and must be freed before relaunch") {
    CUDA_OK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e = nullptr;
    CUDA_OK(cudaGraphInstantiate(&e, g, 0));
    CUDA_OK(cudaGraphLaunch(e, s));
    const auto first = buffer_id(p);
    CHECK(cuda_double::live_allocations() == 1);
    CHECK(cudaGraphLaunch(e, s) == cudaErrorInvalidValue);
    CUDA_OK(cudaFreeAsync(p, s));
    buffer_id(p, CUDA_ERROR_INVALID_VALUE);
    CUDA_OK(cudaGraphLaunch(e, s));
    CHECK(buffer_id(p) != first); // same address, new buffer
    CUDA_OK(cudaGraphExecDestroy(e));
    CUDA_OK(cudaGraphDestroy(g));
    // Memory of a destroyed graph stays valid until freed.
    CHECK(cuda_double::live_allocations() == 1);
    CUDA_OK(cudaFree(p));
    CHECK(cuda_double::live_allocations() == 0);
  }
  SECTION("auto-free on launch") {
    CUDA_OK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e = nullptr;
    CUDA_OK(cudaGraphInstantiateWithFlags(&e, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    CUDA_OK(cudaGraphLaunch(e, s));
    CUDA_OK(cudaGraphLaunch(e, s));
    CHECK(cuda_double::live_allocations() == 1);
  }
}

TEST_CASE("a captured free only takes graph memory", "[memory][capture]") {
  Clean clean;
  cudaStream_t s = make_stream();
  void* d = device_alloc(16);
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaFreeAsync(d, s) == cudaErrorInvalidValue);
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CHECK(graph_nodes(g).empty());
}

TEST_CASE("executables take memory from a per-device cache of 2 MiB pieces, kept at destruction",
          "[memory][graph]") {
  Clean clean;
  constexpr std::size_t piece = std::size_t{2} << 20;
  auto free_bytes = [] {
    std::size_t free = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free, &total));
    return free;
  };
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t node = nullptr;
  for (int i = 0; i < 1000; ++i) {
    CUDA_OK(cudaGraphAddEmptyNode(&node, graph, nullptr, 0)); // empty nodes take none
  }
  cudaGraphExec_t exec = nullptr;
  const std::size_t start = free_bytes();
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(free_bytes() == start); // off by default
  CUDA_OK(cudaGraphExecDestroy(exec));
  cuda_double::set_executable_memory(0, 4096); // per node of another type than kernel/memset
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(free_bytes() == start); // empty nodes: none
  CUDA_OK(cudaGraphExecDestroy(exec));
  cudaGraph_t events = nullptr;
  CUDA_OK(cudaGraphCreate(&events, 0));
  cudaEvent_t event = nullptr;
  CUDA_OK(cudaEventCreate(&event));
  for (int i = 0; i < 600; ++i) { // 600 x 4 KiB = 2.34 MiB: two pieces
    CUDA_OK(cudaGraphAddEventRecordNode(&node, events, nullptr, 0, event));
  }
  std::vector<cudaGraphExec_t> execs(3);
  CUDA_OK(cudaGraphInstantiate(&execs[0], events, 0));
  CHECK(start - free_bytes() == 2 * piece);
  CHECK(cuda_double::executable_cache_bytes() == 2 * piece);
  CHECK(cuda_double::executable_cache_used() == 600 * 4096);
  CUDA_OK(cudaGraphInstantiate(&execs[1], events, 0)); // 4.69 MiB: three pieces
  CHECK(start - free_bytes() == 3 * piece);
  CUDA_OK(cudaGraphExecDestroy(execs[0]));
  CUDA_OK(cudaGraphExecDestroy(execs[1]));
  CHECK(start - free_bytes() == 3 * piece); // kept, as the H200 keeps them
  CHECK(cuda_double::executable_cache_used() == 0);
  CUDA_OK(cudaGraphInstantiate(&execs[2], events, 0)); // from the kept pieces
  CHECK(start - free_bytes() == 3 * piece);
  CUDA_OK(cudaGraphExecDestroy(execs[2]));
  std::size_t free = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free, &total));
  cuda_double::set_device_memory(total - free + piece);            // room for one piece more
  cuda_double::set_executable_memory(0, piece);                    // 600 pieces: more than that
  CHECK(cudaGraphInstantiate(&execs[0], graph, 0) == cudaSuccess); // empty nodes still fit
  CUDA_OK(cudaGraphExecDestroy(execs[0]));
  CHECK(cudaGraphInstantiate(&execs[0], events, 0) == cudaErrorMemoryAllocation);
  cudaGetLastError();
  CUDA_OK(cudaEventDestroy(event));
  CUDA_OK(cudaGraphDestroy(events));
  CUDA_OK(cudaGraphDestroy(graph));
  cuda_double::reset();
  CHECK(cuda_double::executable_cache_bytes() == 0);
}
