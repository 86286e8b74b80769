// Probe (kept, docs/errors.md "pool::sleepable"; issue #44 defect 7): which VMM call reports that
// the device has no memory left, and when a physical allocation counts as used device memory.
// Fills the device with cudaMalloc until less than 64 MiB is free, then for an allocation of
// 256 MiB (more than is free) calls cuMemCreate, cuMemMap, cuMemSetAccess in turn, printing each
// result and the free memory after each; then the same for 32 MiB (fits), and a case where the
// memory goes after cuMemCreate (created while free, the rest taken before the map).
//
//   nvcc -std=c++20 -arch=sm_90 -o vmm_out_of_memory vmm_out_of_memory.cu && ./vmm_out_of_memory
//   (no -lcuda: the driver functions come from cudaGetDriverEntryPointByVersion)
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace {

template <class F>
F entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
  if (fn == nullptr) {
    std::printf("no %s\n", name);
  }
  return reinterpret_cast<F>(fn);
}

std::size_t free_mib() {
  std::size_t free = 0;
  std::size_t total = 0;
  cudaMemGetInfo(&free, &total);
  return free >> 20;
}

const char* name(CUresult r) {
  return cudaGetErrorName(static_cast<cudaError_t>(r)); // CUresult values match cudaError_t here
}

struct vmm {
  PFN_cuMemAddressReserve_v10020 reserve =
      entry<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  PFN_cuMemAddressFree_v10020 address_free = entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  PFN_cuMemCreate_v10020 create = entry<PFN_cuMemCreate_v10020>("cuMemCreate");
  PFN_cuMemRelease_v10020 release = entry<PFN_cuMemRelease_v10020>("cuMemRelease");
  PFN_cuMemMap_v10020 map = entry<PFN_cuMemMap_v10020>("cuMemMap");
  PFN_cuMemUnmap_v10020 unmap = entry<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  PFN_cuMemSetAccess_v10020 set_access = entry<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");
};

// Creates, maps and opens `bytes`; `between` runs after the create. Prints each step.
template <class Between>
void attempt(const vmm& v, std::size_t bytes, const char* label, Between between) {
  std::printf("== %s: %zu MiB, %zu MiB free\n", label, bytes >> 20, free_mib());
  CUdeviceptr base = 0;
  std::printf("  cuMemAddressReserve -> %s\n", name(v.reserve(&base, bytes, 0, 0, 0)));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  const CUresult created = v.create(&handle, bytes, &prop, 0);
  std::printf("  cuMemCreate -> %s, %zu MiB free\n", name(created), free_mib());
  between();
  CUresult mapped = CUDA_ERROR_NOT_PERMITTED;
  if (created == CUDA_SUCCESS) {
    mapped = v.map(base, bytes, 0, handle, 0);
    std::printf("  cuMemMap -> %s, %zu MiB free\n", name(mapped), free_mib());
  }
  if (mapped == CUDA_SUCCESS) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = 0;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    std::printf("  cuMemSetAccess -> %s, %zu MiB free\n", name(v.set_access(base, bytes, &desc, 1)),
                free_mib());
    std::printf("  cuMemUnmap -> %s\n", name(v.unmap(base, bytes)));
  }
  if (created == CUDA_SUCCESS) {
    std::printf("  cuMemRelease -> %s, %zu MiB free\n", name(v.release(handle)), free_mib());
  }
  std::printf("  cuMemAddressFree -> %s\n", name(v.address_free(base, bytes)));
  static_cast<void>(cudaGetLastError());
}

} // namespace

int main() {
  cudaFree(nullptr);
  const vmm v;
  if (v.create == nullptr || v.map == nullptr || v.set_access == nullptr) {
    return 1;
  }
  std::vector<void*> taken;
  const auto fill_until = [&](std::size_t left_mib) {
    for (std::size_t chunk : {std::size_t{1} << 30, std::size_t{64} << 20, std::size_t{2} << 20}) {
      void* p = nullptr;
      while (free_mib() > left_mib + (chunk >> 20) && cudaMalloc(&p, chunk) == cudaSuccess) {
        taken.push_back(p);
      }
      static_cast<void>(cudaGetLastError());
    }
  };
  fill_until(64);
  attempt(v, std::size_t{256} << 20, "more than is free", [] {});
  attempt(v, std::size_t{32} << 20, "fits", [] {});
  attempt(v, std::size_t{48} << 20, "the rest taken after cuMemCreate", [&] { fill_until(8); });
  for (void* p : taken) {
    cudaFree(p);
  }
  std::printf("done, %zu MiB free\n", free_mib());
  return 0;
}
