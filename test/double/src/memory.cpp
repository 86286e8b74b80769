// Memory. "Device memory" is host memory (256-byte aligned) tracked in a
// registry keyed by address, so pointer queries, range checks and buffer ids
// behave like CUDA's. Stream-ordered pools keep freed blocks for reuse, which
// also gives the address reuse that buffer ids must see through.
#include "state.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace cuda_double::detail;

namespace {

// Sizes past any device's memory round to 0 bytes, which every capacity check below refuses.
std::size_t round_up(std::size_t n) {
  if (n > (std::size_t{1} << 48))
    return 0;
  return (std::max<std::size_t>(n, 1) + kAlignment - 1) / kAlignment * kAlignment;
}

void* raw_alloc(std::size_t capacity) {
  return std::aligned_alloc(kAlignment, capacity);
}

} // namespace

namespace cuda_double::detail {

Allocation& register_allocation(void* base, std::size_t size, std::size_t capacity,
                                Allocation::Kind kind, int device) {
  Allocation a;
  a.base = base;
  a.size = size;
  a.capacity = capacity;
  a.kind = kind;
  a.device = device;
  a.buffer_id = state().next_buffer_id++;
  return state().allocations[reinterpret_cast<std::uintptr_t>(base)] = a;
}

} // namespace cuda_double::detail

namespace {

Allocation* exact_allocation(const void* ptr) {
  auto it = state().allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  return it == state().allocations.end() ? nullptr : &it->second;
}

void erase_allocation(Allocation& a) {
  void* base = a.base;
  state().allocations.erase(reinterpret_cast<std::uintptr_t>(base));
  std::free(base);
}

CUmemPoolHandle_st* default_pool(int device) {
  auto& p = state().default_pools[device];
  if (!p) {
    p = std::make_unique<CUmemPoolHandle_st>();
    p->device = device;
    p->is_default = true;
    p->props.allocType = cudaMemAllocationTypePinned;
    p->props.location.type = cudaMemLocationTypeDevice;
    p->props.location.id = device;
  }
  return p.get();
}

cudaMemPool_t current_pool(int device) {
  auto it = state().current_pools.find(device);
  return it == state().current_pools.end() ? default_pool(device) : it->second;
}

bool live_pool(cudaMemPool_t pool) {
  if (!pool)
    return false;
  if (pool->is_default) {
    auto it = state().default_pools.find(pool->device);
    return it != state().default_pools.end() && it->second.get() == pool;
  }
  return state().pools.count(pool) && !pool->destroyed;
}

void trim(CUmemPoolHandle_st& pool, unsigned long long keep) {
  while (pool.reserved > keep && !pool.cache.empty()) {
    auto it = std::prev(pool.cache.end()); // largest block first
    pool.reserved -= it->first;
    std::free(it->second);
    pool.cache.erase(it);
  }
  if (pool.used == 0 && pool.reserved > keep) { // the reserve goes once nothing is in use
    pool.reserved -= pool.slack;
    pool.slack = 0;
  }
}

void delete_pool_if_done(cudaMemPool_t pool) {
  if (!pool->destroyed || pool->used > 0)
    return;
  trim(*pool, 0);
  state().pools.erase(pool);
  delete pool;
}

cudaError_t pool_alloc(void** out, std::size_t size, cudaMemPool_t pool) {
  const std::size_t cap = round_up(size);
  if (cap == 0)
    return cudaErrorMemoryAllocation;
  void* p = nullptr;
  auto it = pool->cache.find(cap);
  if (it != pool->cache.end()) {
    p = it->second; // reuse: same address, new buffer id
    pool->cache.erase(it);
  } else {
    // From the reserve's room, or a new reserve of at least set_mempool_reserve's size.
    const std::size_t grow = pool->slack >= cap ? 0 : std::max(cap, state().mempool_reserve);
    if (device_bytes_in_use() + grow > state().total_memory)
      return cudaErrorMemoryAllocation;
    p = raw_alloc(cap);
    if (!p)
      return cudaErrorMemoryAllocation;
    pool->reserved += grow;
    pool->slack = grow == 0 ? pool->slack - cap : pool->slack + (grow - cap);
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  }
  pool->used += cap;
  pool->used_high = std::max(pool->used_high, pool->used);
  register_allocation(p, size, cap, Allocation::Kind::device, pool->device).pool = pool;
  *out = p;
  return cudaSuccess;
}

// Frees any device-side allocation the user may free: cudaMalloc memory,
// pool memory (back to its pool) and backed graph allocations.
cudaError_t free_device(void* ptr) {
  Allocation* a = exact_allocation(ptr);
  if (!a || a->kind == Allocation::Kind::pinned || a->kind == Allocation::Kind::vmm)
    return cudaErrorInvalidValue;
  if (a->kind == Allocation::Kind::graph) {
    if (!a->mapped)
      return cudaErrorInvalidValue;
    unmap_graph_allocation(*a);
    return cudaSuccess;
  }
  if (cudaMemPool_t pool = a->pool) {
    pool->used -= a->capacity;
    pool->cache.emplace(a->capacity, a->base);
    state().allocations.erase(reinterpret_cast<std::uintptr_t>(ptr));
    delete_pool_if_done(pool);
    return cudaSuccess;
  }
  // cudaMalloc memory: kept for reuse at the same address (see State::freed_device_blocks).
  state().freed_device_blocks.emplace(a->capacity, a->base);
  state().allocations.erase(reinterpret_cast<std::uintptr_t>(ptr));
  return cudaSuccess;
}

cudaError_t malloc_async(void** ptr, std::size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  if (!ptr)
    return cudaErrorInvalidValue;
  Target t;
  if (cudaError_t e = begin_stream_op(stream, t))
    return e;
  if (!pool)
    pool = current_pool(t.stream->device);
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  if (t.capture) {
    // Captured: a memory allocation node whose address is reserved now
    // and stays fixed for the graph's lifetime.
    void* reserved = reserve_graph_allocation(size, pool->device);
    if (!reserved)
      return cudaErrorMemoryAllocation;
    CUgraphNode_st* n = capture_node(t, cudaGraphNodeTypeMemAlloc);
    n->alloc.poolProps = pool->props;
    n->alloc.bytesize = size;
    n->alloc.dptr = reserved;
    *ptr = n->alloc.dptr;
    return cudaSuccess;
  }
  return pool_alloc(ptr, size, pool);
}

cudaError_t alloc_pinned(void** ptr, std::size_t size, unsigned flags) {
  if (!ptr)
    return cudaErrorInvalidValue;
  if (flags & ~0xFu)
    return cudaErrorInvalidValue;
  if (cudaError_t e = check_unsafe_call())
    return e;
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  const std::size_t cap = round_up(size);
  if (cap == 0)
    return cudaErrorMemoryAllocation;
  void* p = raw_alloc(cap);
  if (!p)
    return cudaErrorMemoryAllocation;
  register_allocation(p, size, cap, Allocation::Kind::pinned, thread_state().device);
  *ptr = p;
  return cudaSuccess;
}

} // namespace

namespace cuda_double::detail {

std::size_t device_bytes_in_use() {
  std::size_t n = 0;
  for (const auto& [base, a] : state().allocations) {
    if (a.kind != Allocation::Kind::pinned)
      n += a.capacity;
  }
  auto cached = [](const CUmemPoolHandle_st& p) {
    std::size_t c = 0;
    for (const auto& [cap, ptr] : p.cache)
      c += cap;
    return c + p.slack;
  };
  for (const auto& [d, p] : state().default_pools)
    n += cached(*p);
  for (cudaMemPool_t p : state().pools)
    n += cached(*p);
  for (const auto& [d, cache] : state().exec_caches)
    n += cache.reserved;
  return n + vmm_physical_bytes();
}

void squeeze_exec_caches() {
  constexpr std::size_t piece = std::size_t{2} << 20;
  for (auto& [d, cache] : state().exec_caches)
    cache.reserved = (cache.used + piece - 1) / piece * piece;
}

Allocation* find_allocation(const void* ptr) {
  auto& m = state().allocations;
  auto it = m.upper_bound(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == m.begin())
    return nullptr;
  --it;
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  return p < it->first + it->second.size ? &it->second : nullptr;
}

bool device_range(const void* ptr, std::size_t bytes, bool allow_reserved) {
  const Allocation* a = find_allocation(ptr);
  if (!a)
    return false;
  if (!a->mapped && !(allow_reserved && a->kind == Allocation::Kind::graph))
    return false;
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(ptr) + bytes;
  std::uintptr_t covered = reinterpret_cast<std::uintptr_t>(a->base) + a->size;
  // VMM mappings side by side in one reserved range are one range of memory, as on a GPU.
  while (end > covered && a->kind == Allocation::Kind::vmm) {
    const auto next = state().allocations.find(covered);
    if (next == state().allocations.end() || next->second.kind != Allocation::Kind::vmm ||
        !next->second.mapped)
      return false;
    a = &next->second;
    covered += a->size;
  }
  return end <= covered;
}

cudaError_t check_memcpy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                         bool allow_reserved) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  if (count == 0)
    return cudaSuccess;
  if (!dst || !src)
    return cudaErrorInvalidValue;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (dst_dev && !device_range(dst, count, allow_reserved))
    return cudaErrorInvalidValue;
  if (src_dev && !device_range(src, count, allow_reserved))
    return cudaErrorInvalidValue;
  if (kind == cudaMemcpyDefault) {
    // UVA: a pointer inside a tracked allocation must fit in it.
    for (const void* p : {static_cast<const void*>(dst), src}) {
      if (find_allocation(p) && !device_range(p, count, allow_reserved))
        return cudaErrorInvalidValue;
    }
  }
  return cudaSuccess;
}

std::size_t memset_extent(const cudaMemsetParams& p) {
  return (p.height - 1) * p.pitch + p.width * p.elementSize;
}

cudaError_t check_memset(const cudaMemsetParams& p, bool allow_reserved) {
  if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4)
    return cudaErrorInvalidValue;
  if (p.width == 0 || p.height == 0)
    return cudaErrorInvalidValue;
  if (p.height > 1 && p.pitch < p.width * p.elementSize)
    return cudaErrorInvalidValue;
  if (!device_range(p.dst, memset_extent(p), allow_reserved))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

void do_memset(const cudaMemsetParams& p) {
  // One element written, then doubled: a row of millions of elements costs a few dozen copies
  // (an element-by-element loop made the sanitized fault sweeps crawl).
  const std::uint32_t v32 = p.value;
  const auto v16 = static_cast<std::uint16_t>(p.value);
  const auto v8 = static_cast<std::uint8_t>(p.value);
  const void* element = p.elementSize == 4   ? static_cast<const void*>(&v32)
                        : p.elementSize == 2 ? static_cast<const void*>(&v16)
                                             : static_cast<const void*>(&v8);
  const std::size_t row_bytes = p.width * p.elementSize;
  for (std::size_t y = 0; y < p.height && row_bytes > 0; ++y) {
    auto* row = static_cast<unsigned char*>(p.dst) + y * p.pitch;
    std::memcpy(row, element, p.elementSize);
    for (std::size_t done = p.elementSize; done < row_bytes;) {
      const std::size_t n = std::min(done, row_bytes - done);
      std::memcpy(row + done, row, n);
      done += n;
    }
  }
}

void do_memcpy3d(const cudaMemcpy3DParms& p) {
  for (std::size_t z = 0; z < p.extent.depth; ++z) {
    for (std::size_t y = 0; y < p.extent.height; ++y) {
      auto at = [&](const cudaPitchedPtr& ptr, const cudaPos& pos) {
        return static_cast<char*>(ptr.ptr) + ((pos.z + z) * ptr.ysize + pos.y + y) * ptr.pitch +
               pos.x;
      };
      std::memmove(at(p.dstPtr, p.dstPos), at(p.srcPtr, p.srcPos), p.extent.width);
    }
  }
}

cudaMemcpy3DParms memcpy1d_params(void* dst, const void* src, std::size_t count,
                                  cudaMemcpyKind kind) {
  // CUDA reports a 1D copy as a 3D copy of one row.
  cudaMemcpy3DParms p{};
  p.srcPtr = cudaPitchedPtr{const_cast<void*>(src), count, count, 1};
  p.dstPtr = cudaPitchedPtr{dst, count, count, 1};
  p.extent = cudaExtent{count, 1, 1};
  p.kind = kind;
  return p;
}

void* reserve_graph_allocation(std::size_t size, int device) {
  const std::size_t cap = round_up(size);
  if (cap == 0)
    return nullptr;
  void* p = raw_alloc(cap);
  Allocation& a = register_allocation(p, size, cap, Allocation::Kind::graph, device);
  a.mapped = false;
  a.graph_refs = 1;
  return p;
}

void release_graph_reference(void* base) {
  Allocation* a = exact_allocation(base);
  if (!a || a->kind != Allocation::Kind::graph)
    return;
  if (--a->graph_refs == 0 && !a->mapped)
    erase_allocation(*a);
}

void map_graph_allocation(Allocation& a) {
  a.mapped = true;
  a.buffer_id = state().next_buffer_id++;
}

void unmap_graph_allocation(Allocation& a) {
  // Once no graph refers to the address, freeing it ends it for good.
  a.mapped = false;
  if (a.graph_refs == 0)
    erase_allocation(a);
}

void release_pools_on_sync() {
  for (auto& [d, p] : state().default_pools)
    trim(*p, p->release_threshold);
  for (cudaMemPool_t p : state().pools)
    trim(*p, p->release_threshold);
}

void free_all_memory() {
  State& st = state();
  for (auto& [base, a] : st.allocations) {
    if (a.kind != Allocation::Kind::vmm) // a mapping's memory is its reservation's
      std::free(a.base);
  }
  st.allocations.clear();
  free_all_vmm();
  for (auto& [capacity, block] : st.freed_device_blocks)
    std::free(block);
  st.freed_device_blocks.clear();
  for (auto& [d, p] : st.default_pools)
    trim(*p, 0);
  st.default_pools.clear();
  for (cudaMemPool_t p : st.pools) {
    trim(*p, 0);
    delete p;
  }
  st.pools.clear();
  st.current_pools.clear();
}

} // namespace cuda_double::detail

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return api(__func__, [&] {
    if (!devPtr)
      return cudaErrorInvalidValue;
    if (cudaError_t e = check_unsafe_call())
      return e;
    if (size == 0) {
      *devPtr = nullptr;
      return cudaSuccess;
    }
    const std::size_t cap = round_up(size);
    if (cap != 0 && device_bytes_in_use() + cap > state().total_memory)
      squeeze_exec_caches(); // under pressure the driver gives its unused executable pieces back
    if (cap == 0 || device_bytes_in_use() + cap > state().total_memory)
      return cudaErrorMemoryAllocation;
    void* p = nullptr;
    auto [reusable, reusable_end] = state().freed_device_blocks.equal_range(cap);
    if (reusable != reusable_end) {
      const auto newest = std::prev(reusable_end); // the block freed last comes back first
      p = newest->second;
      state().freed_device_blocks.erase(newest);
    } else {
      p = raw_alloc(cap);
    }
    if (!p)
      return cudaErrorMemoryAllocation;
    register_allocation(p, size, cap, Allocation::Kind::device, thread_state().device);
    *devPtr = p;
    return cudaSuccess;
  });
}

cudaError_t cudaFree(void* devPtr) {
  return api(__func__, [&] {
    if (!devPtr)
      return cudaSuccess;
    if (cudaError_t e = check_unsafe_call())
      return e;
    return free_device(devPtr);
  });
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return api(__func__, [&] { return alloc_pinned(ptr, size, cudaHostAllocDefault); });
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return api(__func__, [&] { return alloc_pinned(pHost, size, flags); });
}

cudaError_t cudaFreeHost(void* ptr) {
  return api(__func__, [&] {
    if (!ptr)
      return cudaSuccess;
    if (cudaError_t e = check_unsafe_call())
      return e;
    Allocation* a = exact_allocation(ptr);
    if (!a || a->kind != Allocation::Kind::pinned)
      return cudaErrorInvalidValue;
    erase_allocation(*a);
    return cudaSuccess;
  });
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return api(__func__, [&] { return malloc_async(devPtr, size, nullptr, hStream); });
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream) {
  return api(__func__, [&] {
    if (!live_pool(memPool))
      return cudaErrorInvalidValue;
    return malloc_async(ptr, size, memPool, stream);
  });
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return api(__func__, [&] {
    Target t;
    if (cudaError_t e = begin_stream_op(hStream, t))
      return e;
    if (!devPtr)
      return cudaSuccess;
    if (t.capture) {
      // Captured frees become free nodes, which release graph memory only.
      Allocation* a = exact_allocation(devPtr);
      if (!a || a->kind != Allocation::Kind::graph)
        return cudaErrorInvalidValue;
      capture_node(t, cudaGraphNodeTypeMemFree)->free_ptr = devPtr;
      return cudaSuccess;
    }
    return free_device(devPtr);
  });
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* poolProps) {
  return api(__func__, [&] {
    if (!memPool || !poolProps)
      return cudaErrorInvalidValue;
    if (poolProps->allocType != cudaMemAllocationTypePinned ||
        poolProps->location.type != cudaMemLocationTypeDevice) {
      return cudaErrorInvalidValue;
    }
    if (!valid_device(poolProps->location.id))
      return cudaErrorInvalidDevice;
    auto* p = new CUmemPoolHandle_st;
    p->device = poolProps->location.id;
    p->props = *poolProps;
    state().pools.insert(p);
    *memPool = p;
    return cudaSuccess;
  });
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  return api(__func__, [&] {
    if (!live_pool(memPool) || memPool->is_default)
      return cudaErrorInvalidValue;
    for (auto it = state().current_pools.begin(); it != state().current_pools.end();) {
      it = it->second == memPool ? state().current_pools.erase(it) : std::next(it);
    }
    // Outstanding allocations keep the pool alive until they are freed.
    memPool->destroyed = true;
    delete_pool_if_done(memPool);
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  return api(__func__, [&] {
    if (!memPool)
      return cudaErrorInvalidValue;
    if (!valid_device(device))
      return cudaErrorInvalidDevice;
    *memPool = default_pool(device);
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  return api(__func__, [&] {
    if (!memPool)
      return cudaErrorInvalidValue;
    if (!valid_device(device))
      return cudaErrorInvalidDevice;
    *memPool = current_pool(device);
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  return api(__func__, [&] {
    if (!valid_device(device))
      return cudaErrorInvalidDevice;
    if (!live_pool(memPool) || memPool->device != device)
      return cudaErrorInvalidValue;
    state().current_pools[device] = memPool;
    return cudaSuccess;
  });
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  return api(__func__, [&] {
    if (!live_pool(memPool))
      return cudaErrorInvalidValue;
    trim(*memPool, minBytesToKeep);
    return cudaSuccess;
  });
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  return api(__func__, [&] {
    if (!live_pool(memPool) || !value)
      return cudaErrorInvalidValue;
    CUmemPoolHandle_st& p = *memPool;
    const auto u64 = [&] { return *static_cast<unsigned long long*>(value); };
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      p.reuse_follow_event = *static_cast<int*>(value);
      break;
    case cudaMemPoolReuseAllowOpportunistic:
      p.reuse_opportunistic = *static_cast<int*>(value);
      break;
    case cudaMemPoolReuseAllowInternalDependencies:
      p.reuse_internal = *static_cast<int*>(value);
      break;
    case cudaMemPoolAttrReleaseThreshold:
      p.release_threshold = u64();
      break;
    // High watermarks can only be reset (to the current value).
    case cudaMemPoolAttrReservedMemHigh:
      if (u64() != 0)
        return cudaErrorInvalidValue;
      p.reserved_high = p.reserved;
      break;
    case cudaMemPoolAttrUsedMemHigh:
      if (u64() != 0)
        return cudaErrorInvalidValue;
      p.used_high = p.used;
      break;
    default:
      return cudaErrorInvalidValue;
    }
    return cudaSuccess;
  });
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  return api(__func__, [&] {
    if (!live_pool(memPool) || !value)
      return cudaErrorInvalidValue;
    const CUmemPoolHandle_st& p = *memPool;
    auto* u64 = static_cast<unsigned long long*>(value);
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      *static_cast<int*>(value) = p.reuse_follow_event;
      break;
    case cudaMemPoolReuseAllowOpportunistic:
      *static_cast<int*>(value) = p.reuse_opportunistic;
      break;
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = p.reuse_internal;
      break;
    case cudaMemPoolAttrReleaseThreshold:
      *u64 = p.release_threshold;
      break;
    case cudaMemPoolAttrReservedMemCurrent:
      *u64 = p.reserved;
      break;
    case cudaMemPoolAttrReservedMemHigh:
      *u64 = p.reserved_high;
      break;
    case cudaMemPoolAttrUsedMemCurrent:
      *u64 = p.used;
      break;
    case cudaMemPoolAttrUsedMemHigh:
      *u64 = p.used_high;
      break;
    default:
      return cudaErrorInvalidValue;
    }
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGraphMemTrim(int device) {
  return api(__func__, [&] { return valid_device(device) ? cudaSuccess : cudaErrorInvalidDevice; });
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return api(__func__, [&] {
    // Synchronous copies run on the legacy stream and block the host.
    if (cudaError_t e = check_unsafe_call())
      return e;
    if (cudaError_t e = check_legacy_implicit(resolve_stream(cudaStreamLegacy)))
      return e;
    if (cudaError_t e = check_memcpy(dst, src, count, kind, false))
      return e;
    if (count)
      std::memmove(dst, src, count);
    return cudaSuccess;
  });
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return api(__func__, [&] {
    Target t;
    if (cudaError_t e = begin_stream_op(stream, t))
      return e;
    if (cudaError_t e = check_memcpy(dst, src, count, kind, t.capture != nullptr))
      return e;
    if (count == 0)
      return cudaSuccess;
    if (t.capture) {
      capture_node(t, cudaGraphNodeTypeMemcpy)->memcpy = memcpy1d_params(dst, src, count, kind);
    } else {
      std::memmove(dst, src, count);
    }
    return cudaSuccess;
  });
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return api(__func__, [&] {
    if (cudaError_t e = check_legacy_implicit(resolve_stream(cudaStreamLegacy)))
      return e;
    if (count == 0)
      return cudaSuccess;
    const cudaMemsetParams p{devPtr, 0, static_cast<unsigned>(value), 1, count, 1};
    if (cudaError_t e = check_memset(p, false))
      return e;
    do_memset(p);
    return cudaSuccess;
  });
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return api(__func__, [&] {
    Target t;
    if (cudaError_t e = begin_stream_op(stream, t))
      return e;
    if (count == 0)
      return cudaSuccess;
    const cudaMemsetParams p{devPtr, 0, static_cast<unsigned>(value), 1, count, 1};
    if (cudaError_t e = check_memset(p, t.capture != nullptr))
      return e;
    if (t.capture) {
      capture_node(t, cudaGraphNodeTypeMemset)->memset = p;
    } else {
      do_memset(p);
    }
    return cudaSuccess;
  });
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  return api(__func__, [&] {
    if (!free || !total)
      return cudaErrorInvalidValue;
    *total = state().total_memory;
    *free = *total - std::min(*total, device_bytes_in_use());
    return cudaSuccess;
  });
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  return api(__func__, [&] {
    if (!attributes)
      return cudaErrorInvalidValue;
    *attributes = cudaPointerAttributes{};
    const Allocation* a = find_allocation(ptr);
    if (!a || !a->mapped) {
      attributes->type = cudaMemoryTypeUnregistered;
      attributes->device = -2; // CU_DEVICE_INVALID
      return cudaSuccess;
    }
    attributes->device = a->device;
    attributes->devicePointer = const_cast<void*>(ptr);
    if (a->kind == Allocation::Kind::pinned) {
      attributes->type = cudaMemoryTypeHost;
      attributes->hostPointer = const_cast<void*>(ptr);
    } else {
      attributes->type = cudaMemoryTypeDevice;
    }
    return cudaSuccess;
  });
}

} // extern "C"
