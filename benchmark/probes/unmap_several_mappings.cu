// Probe (kept, docs/pools.md): does the driver take one cuMemUnmap over several whole adjacent
// mappings, and does the memory then go back? pool::sleepable's sleep unmaps each run of
// contiguous physical allocations with one call and falls back to one call per mapping where the
// driver refuses (CUDA_ERROR_INVALID_VALUE). CUDA documents that cuMemUnmap cannot unmap part of
// a mapping, not whether one call may cover several. The probe reserves one range, maps `pieces`
// physical allocations of the granularity side by side (each handle released once mapped, as
// the pool does), then calls cuMemUnmap once over the whole range, and prints the driver's answer
// and the device memory cudaMemGetInfo sees free before and after; where the one call is refused,
// it unmaps piece by piece and says so. Exit status 0 when the probe ran to its end (either
// answer), 1 when a call it needs failed, 2 when the one call succeeded but the memory did not
// come back (a driver that takes the call and leaks would be a bug for the pool).
//
//   nvcc -std=c++20 -arch=sm_90 -o unmap_several_mappings unmap_several_mappings.cu
//   ./unmap_several_mappings [pieces]
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

template <class Function>
Function resolve(const char* symbol) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &function, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    std::printf("cannot resolve %s\n", symbol);
    std::exit(1);
  }
  return reinterpret_cast<Function>(function);
}

const char* name_of(CUresult status) {
  static auto* get_name = resolve<CUresult (*)(CUresult, const char**)>("cuGetErrorName");
  const char* name = "unknown";
  get_name(status, &name);
  return name;
}

void require(CUresult status, const char* what) {
  if (status != CUDA_SUCCESS) {
    std::printf("%s failed: %s\n", what, name_of(status));
    std::exit(1);
  }
}

std::size_t free_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    std::printf("cudaMemGetInfo failed\n");
    std::exit(1);
  }
  return free;
}

} // namespace

int main(int argc, char** argv) {
  const int pieces = argc > 1 ? std::atoi(argv[1]) : 12;
  if (cudaFree(nullptr) != cudaSuccess) { // the primary context
    std::printf("no CUDA device\n");
    return 1;
  }
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, device);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("unmap_several_mappings: %s, driver API %d, %d pieces\n", properties.name, driver,
              pieces);

  const auto mem_get_granularity =
      resolve<CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
          "cuMemGetAllocationGranularity");
  const auto address_reserve =
      resolve<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
          "cuMemAddressReserve");
  const auto address_free = resolve<CUresult (*)(CUdeviceptr, size_t)>("cuMemAddressFree");
  const auto create =
      resolve<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                           unsigned long long)>("cuMemCreate");
  const auto map = resolve<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                        unsigned long long)>("cuMemMap");
  const auto release = resolve<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  const auto set_access =
      resolve<CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t)>("cuMemSetAccess");
  const auto unmap = resolve<CUresult (*)(CUdeviceptr, size_t)>("cuMemUnmap");

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t piece = 0;
  require(mem_get_granularity(&piece, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
          "cuMemGetAllocationGranularity");
  piece *= 16; // 32 MiB on the H200: large enough for cudaMemGetInfo to see each piece
  const std::size_t whole = piece * static_cast<std::size_t>(pieces);
  CUdeviceptr base = 0;
  require(address_reserve(&base, whole, 0, 0, 0), "cuMemAddressReserve");

  const std::size_t before = free_bytes();
  for (int i = 0; i < pieces; ++i) {
    CUmemGenericAllocationHandle handle = 0;
    require(create(&handle, piece, &prop, 0), "cuMemCreate");
    require(map(base + piece * static_cast<std::size_t>(i), piece, 0, handle, 0), "cuMemMap");
    require(release(handle), "cuMemRelease"); // the mapping holds the memory, as in the pool
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  require(set_access(base, whole, &access, 1), "cuMemSetAccess");
  if (cudaMemset(reinterpret_cast<void*>(base), 1, whole) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("cudaMemset over the mapped range failed\n");
    return 1;
  }
  const std::size_t mapped = free_bytes();
  std::printf("mapped %d pieces of %zu MiB side by side: %zu MiB less free\n", pieces, piece >> 20,
              (before - mapped) >> 20);

  const CUresult one_call = unmap(base, whole);
  const std::size_t after = free_bytes();
  std::printf("one cuMemUnmap over the %d mappings: %s\n", pieces, name_of(one_call));
  int status = 0;
  if (one_call == CUDA_SUCCESS) {
    std::printf("free after it: %zu MiB of the %zu MiB mapped came back\n", (after - mapped) >> 20,
                (before - mapped) >> 20);
    if (after + piece < before) { // more than one piece's worth still held
      std::printf("ANSWER: taken, but the memory did not come back\n");
      status = 2;
    } else {
      std::printf("ANSWER: taken by the driver; the memory came back\n");
    }
  } else {
    for (int i = 0; i < pieces; ++i) {
      require(unmap(base + piece * static_cast<std::size_t>(i), piece), "cuMemUnmap of a piece");
    }
    std::printf("ANSWER: refused by the driver (%s); one cuMemUnmap per mapping took them, "
                "%zu MiB came back\n",
                name_of(one_call), (free_bytes() - mapped) >> 20);
  }
  require(address_free(base, whole), "cuMemAddressFree");
  return status;
}
