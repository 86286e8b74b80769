// Virtual memory management: cuMemGetAllocationGranularity, cuMemAddressReserve/Free,
// cuMemCreate/Release, cuMemMap/Unmap, cuMemSetAccess, reached through the driver entry points
// (driver.cpp), counted and fault-injectable under their driver names like the double's other
// driver functions.
//
// A reservation is host address space with no access (mmap PROT_NONE), so a kernel model that
// touches an address no mapping makes accessible faults as the GPU would (SIGSEGV), and the
// runtime's copies, memsets and graph nodes refuse it (the registry has no accessible range
// there). A physical allocation counts as device memory (cudaMemGetInfo) from cuMemCreate until it
// is released and unmapped; the call that finds the device out of memory for it is cuMemCreate
// by default (set_vmm_out_of_memory_call: cuMemMap or cuMemSetAccess, as a driver may).
// Its contents live in the reservation's pages while it is mapped and in its own buffer while it is
// not: a fresh one reads as 0xCD bytes, so contents lost across an unmap and a new allocation show.
// Granularity is 2 MiB, as on the H200.
#include "state.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace cuda_double::detail;

namespace {

constexpr std::size_t kGranularity = std::size_t{2} << 20;
constexpr unsigned char kFreshByte = 0xCD;

void* to_pointer(CUdeviceptr address) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

bool aligned(std::size_t value) {
  return value % kGranularity == 0;
}

bool valid_prop(const CUmemAllocationProp* prop) {
  return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && valid_device(prop->location.id);
}

// The reservation holding [address, address + size), or null.
const VmmReservation* reservation_of(std::uintptr_t address, std::size_t size) {
  auto& all = state().vmm_reservations;
  auto it = all.upper_bound(address);
  if (it == all.begin())
    return nullptr;
  --it;
  return address + size <= it->first + it->second.size ? &it->second : nullptr;
}

// Calls f(address, mapping) for the mappings that tile [address, address + size) exactly, in
// order; false (calling nothing) if they do not.
template <class F>
bool for_each_mapping(std::uintptr_t address, std::size_t size, F&& f) {
  auto& all = state().vmm_mappings;
  std::vector<std::map<std::uintptr_t, VmmMapping>::iterator> tiles;
  for (std::uintptr_t at = address; at < address + size;) {
    const auto it = all.find(at);
    if (it == all.end())
      return false;
    tiles.push_back(it);
    at += it->second.size;
    if (at > address + size)
      return false;
  }
  for (const auto& it : tiles)
    f(it->first, it->second);
  return true;
}

void protect(std::uintptr_t address, std::size_t size, int protection) {
  ::mprotect(to_pointer(address), size, protection);
}

// True where `call` checks for device memory and the physical allocation behind `handle` (not
// checked yet) does not fit: the device holds more than its memory.
bool out_of_memory_at(const char* call, unsigned long long handle) {
  const VmmPhysical& memory = state().vmm_physical.at(handle);
  return !memory.memory_checked && state().vmm_out_of_memory_call == call &&
         device_bytes_in_use() > state().total_memory;
}

void drop_physical_if_done(unsigned long long handle) {
  const auto it = state().vmm_physical.find(handle);
  if (it != state().vmm_physical.end() && it->second.released && it->second.mappings == 0)
    state().vmm_physical.erase(it);
}

CUresult CUDAAPI mem_get_allocation_granularity(size_t* granularity,
                                                const CUmemAllocationProp* prop,
                                                CUmemAllocationGranularity_flags option) {
  return driver_api("cuMemGetAllocationGranularity", [&] {
    if (!granularity || !valid_prop(prop) ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    *granularity = kGranularity;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI mem_address_reserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr /*addr: a hint the double does not follow*/,
                                     unsigned long long flags) {
  return driver_api("cuMemAddressReserve", [&] {
    if (!ptr || size == 0 || !aligned(size) || flags != 0 || (alignment & (alignment - 1)) != 0 ||
        size > (std::size_t{1} << 46)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const std::size_t align = std::max(alignment, kGranularity);
    void* raw = ::mmap(nullptr, size + align, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
      return CUDA_ERROR_OUT_OF_MEMORY;
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t base = (start + align - 1) / align * align;
    if (base > start)
      ::munmap(raw, base - start);
    if (const std::size_t tail = start + size + align - (base + size); tail > 0)
      ::munmap(to_pointer(base + size), tail);
    state().vmm_reservations[base] = VmmReservation{size};
    *ptr = base;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI mem_address_free(CUdeviceptr ptr, size_t size) {
  return driver_api("cuMemAddressFree", [&] {
    const auto it = state().vmm_reservations.find(ptr);
    if (it == state().vmm_reservations.end() || it->second.size != size)
      return CUDA_ERROR_INVALID_VALUE;
    const auto mapped = state().vmm_mappings.lower_bound(ptr);
    if (mapped != state().vmm_mappings.end() && mapped->first < ptr + size)
      return CUDA_ERROR_INVALID_VALUE; // still mapped: unmap first
    ::munmap(to_pointer(ptr), size);
    state().vmm_reservations.erase(it);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI mem_create(CUmemGenericAllocationHandle* handle, size_t size,
                            const CUmemAllocationProp* prop, unsigned long long flags) {
  return driver_api("cuMemCreate", [&] {
    if (!handle || size == 0 || !aligned(size) || !valid_prop(prop) || flags != 0)
      return CUDA_ERROR_INVALID_VALUE;
    const bool checks = state().vmm_out_of_memory_call == "cuMemCreate";
    if (checks && device_bytes_in_use() + size > state().total_memory)
      return CUDA_ERROR_OUT_OF_MEMORY;
    const unsigned long long id = state().next_vmm_handle++;
    VmmPhysical& physical = state().vmm_physical[id];
    physical.size = size;
    physical.device = prop->location.id;
    physical.memory_checked = checks;
    *handle = id;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI mem_release(CUmemGenericAllocationHandle handle) {
  return driver_api("cuMemRelease", [&] {
    const auto it = state().vmm_physical.find(handle);
    if (it == state().vmm_physical.end() || it->second.released)
      return CUDA_ERROR_INVALID_VALUE;
    it->second.released = true;
    drop_physical_if_done(handle);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI mem_map(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags) {
  return driver_api("cuMemMap", [&] {
    const auto physical = state().vmm_physical.find(handle);
    if (physical == state().vmm_physical.end() || physical->second.released || flags != 0 ||
        size == 0 || !aligned(ptr) || !aligned(size) || !aligned(offset) ||
        offset + size > physical->second.size || !reservation_of(ptr, size)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    auto& mappings = state().vmm_mappings;
    const auto after = mappings.lower_bound(ptr);
    if (after != mappings.end() && after->first < ptr + size)
      return CUDA_ERROR_INVALID_VALUE; // overlaps a mapping
    if (after != mappings.begin() && std::prev(after)->first + std::prev(after)->second.size > ptr)
      return CUDA_ERROR_INVALID_VALUE;
    if (out_of_memory_at("cuMemMap", handle))
      return CUDA_ERROR_OUT_OF_MEMORY;
    VmmPhysical& memory = physical->second;
    memory.memory_checked = memory.memory_checked || state().vmm_out_of_memory_call == "cuMemMap";
    protect(ptr, size, PROT_READ | PROT_WRITE);
    if (memory.contents.empty())
      std::memset(to_pointer(ptr), kFreshByte, size);
    else
      std::memcpy(to_pointer(ptr), memory.contents.data() + offset, size);
    protect(ptr, size, PROT_NONE); // no access until cuMemSetAccess
    mappings[ptr] = VmmMapping{size, offset, handle, false};
    ++memory.mappings;
    Allocation& a =
        register_allocation(to_pointer(ptr), size, 0, Allocation::Kind::vmm, memory.device);
    a.mapped = false;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI mem_unmap(CUdeviceptr ptr, size_t size) {
  return driver_api("cuMemUnmap", [&] {
    if (size == 0 || !aligned(ptr) || !aligned(size))
      return CUDA_ERROR_INVALID_VALUE;
    std::vector<std::uintptr_t> unmapped;
    const bool tiled = for_each_mapping(ptr, size, [&](std::uintptr_t at, VmmMapping& mapping) {
      VmmPhysical& memory = state().vmm_physical.at(mapping.handle);
      if (!memory.released || memory.mappings > 1) { // it keeps its contents
        protect(at, mapping.size, PROT_READ);
        memory.contents.resize(memory.size, kFreshByte);
        std::memcpy(memory.contents.data() + mapping.offset, to_pointer(at), mapping.size);
      }
      ::madvise(to_pointer(at), mapping.size, MADV_DONTNEED); // the host pages go too
      protect(at, mapping.size, PROT_NONE);
      --memory.mappings;
      drop_physical_if_done(mapping.handle);
      state().allocations.erase(at);
      unmapped.push_back(at);
    });
    if (!tiled)
      return CUDA_ERROR_INVALID_VALUE;
    for (const std::uintptr_t at : unmapped)
      state().vmm_mappings.erase(at);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI mem_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
  return driver_api("cuMemSetAccess", [&] {
    if (!desc || count == 0 || size == 0)
      return CUDA_ERROR_INVALID_VALUE;
    CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    for (std::size_t i = 0; i < count; ++i) {
      if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
          !valid_device(desc[i].location.id) ||
          desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      flags = desc[i].flags; // the double has one view of memory: the last entry decides
    }
    const bool writable = flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const bool readable = writable || flags == CU_MEM_ACCESS_FLAGS_PROT_READ;
    bool out_of_memory = false;
    if (!for_each_mapping(ptr, size, [&](std::uintptr_t, VmmMapping& mapping) {
          out_of_memory = out_of_memory || out_of_memory_at("cuMemSetAccess", mapping.handle);
        }))
      return CUDA_ERROR_INVALID_VALUE;
    if (out_of_memory)
      return CUDA_ERROR_OUT_OF_MEMORY;
    const bool tiled = for_each_mapping(ptr, size, [&](std::uintptr_t at, VmmMapping& mapping) {
      if (state().vmm_out_of_memory_call == "cuMemSetAccess")
        state().vmm_physical.at(mapping.handle).memory_checked = true;
      protect(at, mapping.size,
              writable   ? PROT_READ | PROT_WRITE
              : readable ? PROT_READ
                         : PROT_NONE);
      mapping.accessible = readable;
      state().allocations.at(at).mapped = readable;
    });
    return tiled ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

} // namespace

namespace cuda_double::detail {

const VmmEntryPoint kVmmEntryPoints[8] = {
    {"cuMemGetAllocationGranularity", reinterpret_cast<void*>(&mem_get_allocation_granularity)},
    {"cuMemAddressReserve", reinterpret_cast<void*>(&mem_address_reserve)},
    {"cuMemAddressFree", reinterpret_cast<void*>(&mem_address_free)},
    {"cuMemCreate", reinterpret_cast<void*>(&mem_create)},
    {"cuMemRelease", reinterpret_cast<void*>(&mem_release)},
    {"cuMemMap", reinterpret_cast<void*>(&mem_map)},
    {"cuMemUnmap", reinterpret_cast<void*>(&mem_unmap)},
    {"cuMemSetAccess", reinterpret_cast<void*>(&mem_set_access)},
};

std::size_t vmm_physical_bytes() {
  std::size_t bytes = 0;
  for (const auto& [handle, memory] : state().vmm_physical)
    bytes += memory.size;
  return bytes;
}

void free_all_vmm() {
  State& st = state();
  for (const auto& [base, reservation] : st.vmm_reservations)
    ::munmap(to_pointer(base), reservation.size);
  st.vmm_reservations.clear();
  st.vmm_physical.clear();
  st.vmm_mappings.clear();
  st.next_vmm_handle = 1;
}

std::size_t live_vmm_objects() {
  return state().vmm_reservations.size() + state().vmm_physical.size();
}

} // namespace cuda_double::detail
