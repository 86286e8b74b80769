// graphcap/detail/nvtx_regions.hpp - tells memory checkers which parts of a pool are in use.
//
// A pool slab is one CUDA allocation, so compute-sanitizer alone sees a write past the end of a
// block into its neighbour as valid. Registering each slab as an NVTX sub-allocator heap and each
// block handed out as a region of it lets `compute-sanitizer --tool memcheck --nvtx yes` report
// such an access. NVTX is header-only and costs a load and a branch per call when no tool is
// attached; these calls happen when the pool grows or hands out a block, never on replay.
//
// Opt-in: define GRAPHCAP_NVTX_REGIONS. On the H200 (compute-sanitizer of CUDA 13.0) a first
// slab registers and an overrun past its block is reported, but in long runs that free slabs and
// take new ones compute-sanitizer rejects most later registrations ("nvtxMemHeapRegister failed:
// one or more of the parameters is invalid", counted as errors): not understood yet, so the
// regions are off unless asked for (docs/pools.md). Off, nothing of NVTX is compiled in.
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef GRAPHCAP_NVTX_REGIONS
#include <nvtx3/nvToolsExtMem.h>
#endif

namespace graphcap::detail::nvtx_regions {

#ifdef GRAPHCAP_NVTX_REGIONS

using heap = nvtxMemHeapHandle_t;

/// graphcap's NVTX domain, created on first use.
inline nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("graphcap");
  return handle;
}

/// Registers a slab as a heap whose unregistered parts must not be accessed.
inline heap add_slab(const void* base, std::size_t bytes) noexcept {
  const nvtxMemVirtualRangeDesc_t range{bytes, base};
  nvtxMemHeapDesc_t desc{};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof(desc);
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof(range);
  desc.typeSpecificDesc = &range;
  const heap handle = nvtxMemHeapRegister(domain(), &desc);
  // No tool attached: null, or (by the header's comment) -1.
  return reinterpret_cast<std::intptr_t>(handle) == -1 ? nullptr : handle;
}

inline void remove_slab(heap slab) noexcept {
  if (slab != nullptr) {
    nvtxMemHeapUnregister(domain(), slab);
  }
}

/// A block of `slab` handed out: accesses to it are valid.
inline void mark_allocated(heap slab, const void* block, std::size_t bytes) noexcept {
  if (slab == nullptr) {
    return; // no tool attached when the slab was registered
  }
  const nvtxMemVirtualRangeDesc_t range{bytes, block};
  nvtxMemRegionsRegisterBatch_t batch{};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = slab;
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof(range);
  batch.regionDescElements = &range;
  nvtxMemRegionsRegister(domain(), &batch);
}

/// A block given back: accesses to it are errors until it is handed out again.
inline void mark_freed(heap slab, const void* block) noexcept {
  if (slab == nullptr) {
    return;
  }
  nvtxMemRegionRef_t ref{};
  ref.pointer = block;
  nvtxMemRegionsUnregisterBatch_t batch{};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
  batch.refCount = 1;
  batch.refElementSize = sizeof(ref);
  batch.refElements = &ref;
  nvtxMemRegionsUnregister(domain(), &batch);
}

#else

using heap = void*;
inline heap add_slab(const void* /*base*/, std::size_t /*bytes*/) noexcept {
  return nullptr;
}
inline void remove_slab(heap /*slab*/) noexcept {}
inline void mark_allocated(heap /*slab*/, const void* /*block*/, std::size_t /*bytes*/) noexcept {}
inline void mark_freed(heap /*slab*/, const void* /*block*/) noexcept {}

#endif

} // namespace graphcap::detail::nvtx_regions
