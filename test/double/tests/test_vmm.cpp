// Virtual memory management: reserve, create, map, set access, unmap, release, address free.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace {

template <class Function>
Function entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUDA_OK(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &q));
  REQUIRE(q == cudaDriverEntryPointSuccess);
  return reinterpret_cast<Function>(fn);
}

struct Vmm {
  PFN_cuMemGetAllocationGranularity_v10020 granularity =
      entry<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity");
  PFN_cuMemAddressReserve_v10020 reserve =
      entry<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  PFN_cuMemAddressFree_v10020 address_free = entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  PFN_cuMemCreate_v10020 create = entry<PFN_cuMemCreate_v10020>("cuMemCreate");
  PFN_cuMemRelease_v10020 release = entry<PFN_cuMemRelease_v10020>("cuMemRelease");
  PFN_cuMemMap_v10020 map = entry<PFN_cuMemMap_v10020>("cuMemMap");
  PFN_cuMemUnmap_v10020 unmap = entry<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  PFN_cuMemSetAccess_v10020 set_access = entry<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");

  static CUmemAllocationProp prop() {
    CUmemAllocationProp p{};
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
  }
  static CUmemAccessDesc access() {
    CUmemAccessDesc d{};
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return d;
  }
  // A new physical allocation of `bytes` mapped with access at `at`.
  CUmemGenericAllocationHandle back(CUdeviceptr at, std::size_t bytes) {
    const CUmemAllocationProp p = prop();
    CUmemGenericAllocationHandle handle = 0;
    REQUIRE(create(&handle, bytes, &p, 0) == CUDA_SUCCESS);
    REQUIRE(map(at, bytes, 0, handle, 0) == CUDA_SUCCESS);
    const CUmemAccessDesc d = access();
    REQUIRE(set_access(at, bytes, &d, 1) == CUDA_SUCCESS);
    return handle;
  }
};

std::size_t free_bytes() {
  std::size_t free = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free, &total));
  return free;
}

void* ptr(CUdeviceptr address) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

constexpr std::size_t kTwoMiB = std::size_t{2} << 20;

} // namespace

TEST_CASE("vmm: granularity, reserve, map, access, unmap, release, free", "[vmm]") {
  Clean clean;
  Vmm vmm;
  const CUmemAllocationProp prop = Vmm::prop();
  std::size_t granularity = 0;
  REQUIRE(vmm.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ==
          CUDA_SUCCESS);
  CHECK(granularity == kTwoMiB);

  CUdeviceptr base = 0;
  REQUIRE(vmm.reserve(&base, 2 * kTwoMiB, 0, 0, 0) == CUDA_SUCCESS);
  CHECK(base % kTwoMiB == 0);
  CHECK(vmm.reserve(&base, 1000, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE); // not a granule
  const std::size_t before = free_bytes();

  CUmemGenericAllocationHandle handle = 0;
  REQUIRE(vmm.create(&handle, kTwoMiB, &prop, 0) == CUDA_SUCCESS);
  CHECK(free_bytes() == before - kTwoMiB); // physical memory is device memory
  REQUIRE(vmm.map(base, kTwoMiB, 0, handle, 0) == CUDA_SUCCESS);
  CHECK(vmm.map(base, kTwoMiB, 0, handle, 0) == CUDA_ERROR_INVALID_VALUE); // mapped already

  // Mapped without access: the runtime refuses the range.
  std::vector<unsigned char> host(256, 7);
  CHECK(cudaMemcpy(ptr(base), host.data(), host.size(), cudaMemcpyHostToDevice) ==
        cudaErrorInvalidValue);
  cudaGetLastError();
  const CUmemAccessDesc access = Vmm::access();
  REQUIRE(vmm.set_access(base, kTwoMiB, &access, 1) == CUDA_SUCCESS);
  CUDA_OK(cudaMemcpy(ptr(base), host.data(), host.size(), cudaMemcpyHostToDevice));
  CHECK(static_cast<unsigned char*>(ptr(base))[255] == 7); // device memory is host memory
  // The second granule is reserved, not mapped.
  CHECK(cudaMemcpy(ptr(base + kTwoMiB), host.data(), 16, cudaMemcpyHostToDevice) ==
        cudaErrorInvalidValue);
  cudaGetLastError();

  CHECK(vmm.address_free(base, 2 * kTwoMiB) == CUDA_ERROR_INVALID_VALUE); // still mapped
  REQUIRE(vmm.release(handle) == CUDA_SUCCESS); // freed with its last mapping
  CHECK(free_bytes() == before - kTwoMiB);
  REQUIRE(vmm.unmap(base, kTwoMiB) == CUDA_SUCCESS);
  CHECK(free_bytes() == before);
  CHECK(cudaMemcpy(host.data(), ptr(base), 16, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  cudaGetLastError();
  REQUIRE(vmm.address_free(base, 2 * kTwoMiB) == CUDA_SUCCESS);
  CHECK(cuda_double::live_allocations() == 0);
  CHECK(cuda_double::calls("cuMemMap") == 2);
  CHECK(cuda_double::calls("cuMemSetAccess") == 1);
}

TEST_CASE("vmm: a physical allocation keeps its contents while unmapped, a new one does not",
          "[vmm]") {
  Clean clean;
  Vmm vmm;
  CUdeviceptr base = 0;
  REQUIRE(vmm.reserve(&base, kTwoMiB, 0, 0, 0) == CUDA_SUCCESS);
  CUmemGenericAllocationHandle first = vmm.back(base, kTwoMiB);
  CUDA_OK(cudaMemset(ptr(base), 0x5A, 4096));
  REQUIRE(vmm.unmap(base, kTwoMiB) == CUDA_SUCCESS);
  // Mapped again at the same address: the same contents.
  REQUIRE(vmm.map(base, kTwoMiB, 0, first, 0) == CUDA_SUCCESS);
  const CUmemAccessDesc access = Vmm::access();
  REQUIRE(vmm.set_access(base, kTwoMiB, &access, 1) == CUDA_SUCCESS);
  unsigned char byte = 0;
  CUDA_OK(cudaMemcpy(&byte, ptr(base + 4095), 1, cudaMemcpyDeviceToHost));
  CHECK(byte == 0x5A);
  // Released and unmapped; a new allocation at the same address has lost them.
  REQUIRE(vmm.unmap(base, kTwoMiB) == CUDA_SUCCESS);
  REQUIRE(vmm.release(first) == CUDA_SUCCESS);
  const CUmemGenericAllocationHandle second = vmm.back(base, kTwoMiB);
  CUDA_OK(cudaMemcpy(&byte, ptr(base + 4095), 1, cudaMemcpyDeviceToHost));
  CHECK(byte != 0x5A);
  REQUIRE(vmm.unmap(base, kTwoMiB) == CUDA_SUCCESS);
  REQUIRE(vmm.release(second) == CUDA_SUCCESS);
  CHECK(vmm.release(second) == CUDA_ERROR_INVALID_VALUE); // released twice
  REQUIRE(vmm.address_free(base, kTwoMiB) == CUDA_SUCCESS);
  CHECK(cuda_double::live_allocations() == 0);
}

TEST_CASE("vmm: one cuMemUnmap over adjacent whole mappings unmaps them all, other ranges "
          "are refused",
          "[vmm]") {
  // What pool::sleepable's sleep relies on: handles released once mapped, then one unmap of the
  // run frees every allocation. CUDA documents that no unmap covers part of a mapping.
  Clean clean;
  Vmm vmm;
  CUdeviceptr base = 0;
  REQUIRE(vmm.reserve(&base, 4 * kTwoMiB, 0, 0, 0) == CUDA_SUCCESS);
  const std::size_t before = free_bytes();
  for (int i = 0; i < 3; ++i) {
    const CUmemGenericAllocationHandle handle = vmm.back(base + i * kTwoMiB, kTwoMiB);
    REQUIRE(vmm.release(handle) == CUDA_SUCCESS); // the mapping keeps the memory
  }
  CHECK(free_bytes() == before - 3 * kTwoMiB);
  CHECK(vmm.unmap(base, 2 * kTwoMiB + kTwoMiB / 2) == CUDA_ERROR_INVALID_VALUE); // not granular
  CHECK(vmm.unmap(base, 4 * kTwoMiB) == CUDA_ERROR_INVALID_VALUE); // past the last mapping
  CHECK(vmm.unmap(base + kTwoMiB, kTwoMiB) == CUDA_SUCCESS);       // one whole mapping
  CHECK(vmm.unmap(base, 3 * kTwoMiB) == CUDA_ERROR_INVALID_VALUE); // a hole in the range
  CHECK(free_bytes() == before - 2 * kTwoMiB);
  const CUmemGenericAllocationHandle handle = vmm.back(base + kTwoMiB, kTwoMiB);
  REQUIRE(vmm.release(handle) == CUDA_SUCCESS);
  CHECK(vmm.unmap(base, 3 * kTwoMiB) == CUDA_SUCCESS); // three mappings, one call
  CHECK(free_bytes() == before);
  REQUIRE(vmm.address_free(base, 4 * kTwoMiB) == CUDA_SUCCESS);
  CHECK(cuda_double::live_allocations() == 0);
}

TEST_CASE("vmm: a graph replays at the same addresses after an unmap and a new mapping", "[vmm]") {
  Clean clean;
  Vmm vmm;
  CUdeviceptr base = 0;
  REQUIRE(vmm.reserve(&base, kTwoMiB, 0, 0, 0) == CUDA_SUCCESS);
  CUmemGenericAllocationHandle handle = vmm.back(base, kTwoMiB);
  cudaStream_t s = make_stream();
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(ptr(base), 3, 64, s));
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

  REQUIRE(vmm.unmap(base, kTwoMiB) == CUDA_SUCCESS);
  REQUIRE(vmm.release(handle) == CUDA_SUCCESS);
  CHECK(cudaGraphLaunch(exec, s) == cudaErrorIllegalAddress); // nothing mapped there
  cudaGetLastError();
  handle = vmm.back(base, kTwoMiB);
  CUDA_OK(cudaGraphLaunch(exec, s));
  CHECK(static_cast<unsigned char*>(ptr(base))[63] == 3);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(s));
  REQUIRE(vmm.unmap(base, kTwoMiB) == CUDA_SUCCESS);
  REQUIRE(vmm.release(handle) == CUDA_SUCCESS);
  REQUIRE(vmm.address_free(base, kTwoMiB) == CUDA_SUCCESS);
}

TEST_CASE("vmm: each call fails once where a fault is injected, changing nothing", "[vmm]") {
  Clean clean;
  Vmm vmm;
  const char* const calls[] = {"cuMemGetAllocationGranularity",
                               "cuMemAddressReserve",
                               "cuMemCreate",
                               "cuMemMap",
                               "cuMemSetAccess",
                               "cuMemUnmap",
                               "cuMemRelease",
                               "cuMemAddressFree"};
  for (const char* call : calls) {
    CAPTURE(std::string{call});
    cuda_double::fail_call(call, cudaErrorMemoryAllocation);
    const CUmemAllocationProp prop = Vmm::prop();
    const CUmemAccessDesc access = Vmm::access();
    std::size_t granularity = 0;
    CUresult failed = CUDA_SUCCESS;
    auto step = [&](CUresult result) {
      if (result != CUDA_SUCCESS) {
        CHECK(failed == CUDA_SUCCESS); // one failure only
        failed = result;
        return false;
      }
      return true;
    };
    while (!step(vmm.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM))) {
    }
    CUdeviceptr base = 0;
    while (!step(vmm.reserve(&base, kTwoMiB, 0, 0, 0))) {
    }
    CUmemGenericAllocationHandle handle = 0;
    while (!step(vmm.create(&handle, kTwoMiB, &prop, 0))) {
    }
    while (!step(vmm.map(base, kTwoMiB, 0, handle, 0))) {
    }
    while (!step(vmm.set_access(base, kTwoMiB, &access, 1))) {
    }
    while (!step(vmm.unmap(base, kTwoMiB))) {
    }
    while (!step(vmm.release(handle))) {
    }
    while (!step(vmm.address_free(base, kTwoMiB))) {
    }
    CHECK(failed == CUDA_ERROR_OUT_OF_MEMORY); // the same value as cudaErrorMemoryAllocation
    CHECK(cuda_double::live_allocations() == 0);
  }
}

TEST_CASE("vmm: cuMemCreate past the device's memory fails", "[vmm]") {
  Clean clean;
  Vmm vmm;
  std::size_t free = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free, &total));
  const CUmemAllocationProp prop = Vmm::prop();
  CUmemGenericAllocationHandle handle = 0;
  CHECK(vmm.create(&handle, (total / kTwoMiB + 1) * kTwoMiB, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(cuda_double::live_allocations() == 0);
}

TEST_CASE("vmm: past the device's memory, cuMemMap or cuMemSetAccess fails where set", "[vmm]") {
  // set_vmm_out_of_memory_call: cuMemCreate succeeds past the memory, the call set fails, nothing
  // else: the allocation is unmapped and released as any other, and the memory is free again.
  for (const char* checking : {"cuMemSetAccess", "cuMemMap"}) {
    INFO(checking);
    Clean clean;
    cuda_double::set_device_memory(std::size_t{8} << 20);
    cuda_double::set_vmm_out_of_memory_call(checking);
    Vmm vmm;
    void* taken = nullptr;
    CUDA_OK(cudaMalloc(&taken, std::size_t{6} << 20));
    CUdeviceptr base = 0;
    REQUIRE(vmm.reserve(&base, 2 * kTwoMiB, 0, 0, 0) == CUDA_SUCCESS);
    const CUmemAllocationProp prop = Vmm::prop();
    CUmemGenericAllocationHandle handle = 0;
    REQUIRE(vmm.create(&handle, 2 * kTwoMiB, &prop, 0) == CUDA_SUCCESS); // past the memory
    CHECK(free_bytes() == 0);
    const CUmemAccessDesc access = Vmm::access();
    if (std::string{checking} == "cuMemMap") {
      CHECK(vmm.map(base, 2 * kTwoMiB, 0, handle, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    } else {
      REQUIRE(vmm.map(base, 2 * kTwoMiB, 0, handle, 0) == CUDA_SUCCESS);
      CHECK(vmm.set_access(base, 2 * kTwoMiB, &access, 1) == CUDA_ERROR_OUT_OF_MEMORY);
      REQUIRE(vmm.unmap(base, 2 * kTwoMiB) == CUDA_SUCCESS);
    }
    REQUIRE(vmm.release(handle) == CUDA_SUCCESS);
    CUDA_OK(cudaFree(taken));
    CHECK(free_bytes() == std::size_t{8} << 20);
    // With the memory free, the same steps succeed.
    REQUIRE(vmm.create(&handle, 2 * kTwoMiB, &prop, 0) == CUDA_SUCCESS);
    REQUIRE(vmm.map(base, 2 * kTwoMiB, 0, handle, 0) == CUDA_SUCCESS);
    CHECK(vmm.set_access(base, 2 * kTwoMiB, &access, 1) == CUDA_SUCCESS);
    // Once checked, an allocation is not refused again while another one is over.
    CUmemGenericAllocationHandle other = 0;
    REQUIRE(vmm.create(&other, 3 * kTwoMiB, &prop, 0) == CUDA_SUCCESS);
    CHECK(vmm.set_access(base, 2 * kTwoMiB, &access, 1) == CUDA_SUCCESS);
    REQUIRE(vmm.release(other) == CUDA_SUCCESS);
    REQUIRE(vmm.unmap(base, 2 * kTwoMiB) == CUDA_SUCCESS);
    REQUIRE(vmm.release(handle) == CUDA_SUCCESS);
    REQUIRE(vmm.address_free(base, 2 * kTwoMiB) == CUDA_SUCCESS);
    CHECK(cuda_double::live_allocations() == 0);
  }
  CHECK_THROWS_AS(cuda_double::set_vmm_out_of_memory_call("cuMemRelease"), std::invalid_argument);
}

TEST_CASE("vmm: a hidden function is missing, and an old ABI is refused", "[vmm]") {
  Clean clean;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuMemMap", &fn, 10010, cudaEnableDefault, &q));
  CHECK(q == cudaDriverEntryPointVersionNotSufficent);
  CHECK(fn == nullptr);
  cuda_double::hide_driver_function("cuMemCreate");
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, &q));
  CHECK(q == cudaDriverEntryPointSymbolNotFound);
}
