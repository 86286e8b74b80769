// graphcap/pool/detail/nvtx_regions.hpp - tells memory checkers which parts of a pool are in use.
//
// A pool slab is one CUDA allocation, so compute-sanitizer alone sees a write past the end of a
// block into its neighbour as valid. Registering each slab as an NVTX sub-allocator heap and each
// block handed out as a region of it lets `compute-sanitizer --tool memcheck --nvtx yes` report
// such an access. NVTX is header-only and costs a load and a branch per call when no tool is
// attached; these calls happen when the pool grows or hands out a block, never on replay.
//
// Opt-in: define GRAPHCAP_NVTX_REGIONS. compute-sanitizer (CUDA 13.0, checked on the H200)
// accepts a heap only over memory from cudaMalloc or cudaMallocManaged: it refuses memory from
// the stream-ordered allocator ("nvtxMemHeapRegister failed: one or more of the parameters is
// invalid"), which is where slabs normally come from. So with the regions on, a pool takes its
// slabs with cudaMalloc and gives them back with cudaFree once its own stream is done (a debugging
// build: slower to grow and to shrink, the same at replay); a user-supplied cudaMemPool_t still
// gives the slabs, unregistered. Off, nothing of NVTX is compiled in.
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef GRAPHCAP_NVTX_REGIONS
#include <nvtx3/nvToolsExtMem.h>
#endif

namespace graphcap::detail::pool::nvtx_regions {

#ifdef GRAPHCAP_NVTX_REGIONS

/// Slabs must come from cudaMalloc for their heaps to be accepted (see above).
inline constexpr bool enabled = true;

using heap = nvtxMemHeapHandle_t;

/// graphcap's NVTX domain, created on first use.
template <class = void>
nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("graphcap");
  return handle;
}

/// Registers a slab as a heap whose unregistered parts must not be accessed.
template <class = void>
heap add_slab(const void* base, std::size_t bytes) noexcept {
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

template <class = void>
void remove_slab(heap slab) noexcept {
  if (slab != nullptr) {
    nvtxMemHeapUnregister(domain(), slab);
  }
}

/// A block of `slab` handed out: accesses to it are valid.
template <class = void>
void mark_allocated(heap slab, const void* block, std::size_t bytes) noexcept {
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
template <class = void>
void mark_freed(heap slab, const void* block) noexcept {
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

inline constexpr bool enabled = false;

using heap = void*;
template <class = void>
heap add_slab(const void* /*base*/, std::size_t /*bytes*/) noexcept {
  return nullptr;
}
template <class = void>
void remove_slab(heap /*slab*/) noexcept {}
template <class = void>
void mark_allocated(heap /*slab*/, const void* /*block*/, std::size_t /*bytes*/) noexcept {}
template <class = void>
void mark_freed(heap /*slab*/, const void* /*block*/) noexcept {}

#endif

} // namespace graphcap::detail::pool::nvtx_regions
