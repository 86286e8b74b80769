// graphcap/pool/detail/vmm_chunks.hpp - the memory of pool::sleepable: slabs that are chunks of
// CUDA virtual memory, whose physical pages can be given back and taken again at the same
// addresses.
//
// Each chunk is an address range of its own (cuMemAddressReserve, rounded up to the allocation
// granularity) with one physical allocation mapped into it (cuMemCreate, cuMemMap,
// cuMemSetAccess for the pool's device). pool_core (pool/detail/pool_core.hpp) carves blocks from
// the chunks as from any slab: a block taken from a free list makes no CUDA call.
//
// Sleep unmaps and releases every chunk's physical allocation and keeps the addresses reserved;
// with a backup, what the chunks hold is first copied to pinned host memory. Wake creates and maps
// new physical allocations at the same addresses and copies the backup back, so graphs captured
// against the pool replay as they are: graph nodes hold virtual addresses.
//
// Failures leave a state that a retry finishes: a chunk records whether it is mapped and whether
// it holds a physical allocation. A sleep that fails partway leaves the pool asleep (some chunks
// still mapped; sleep() again releases the rest, wake() maps them all). A wake that fails gives
// back what it took, stays asleep and keeps the backup. The driver functions come through the
// lazy driver layer (cuda/detail/driver.hpp): where the driver lacks one, only this pool fails,
// with a message naming it. Not internally synchronized, as pool_core.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/cuda/detail/unique_handle.hpp>
#include <graphcap/error.hpp>
#include <graphcap/pool/detail/slab_memory.hpp>
#include <graphcap/pool/detail/vmm_driver.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace graphcap::detail::pool {

/// The chunks of one sleepable pool, and its sleep and wake (see the top of this file).
class vmm_chunks final : public slab_source {
public:
  vmm_chunks() = default;
  vmm_chunks(const vmm_chunks&) = delete;
  vmm_chunks& operator=(const vmm_chunks&) = delete;
  vmm_chunks(vmm_chunks&&) = delete;
  vmm_chunks& operator=(vmm_chunks&&) = delete;
  /// Gives every chunk back (pool_core frees its slabs first: normally none is left).
  ~vmm_chunks() override {
    while (!chunks_.empty()) {
      free(vmm_pointer(chunks_.begin()->first));
    }
  }

  /// A new chunk of at least `size` bytes at `*slab` (see slab_source).
  [[nodiscard]] cudaError_t allocate(void** slab, std::size_t size) override;
  /// Unmaps, releases and unreserves a chunk; errors are ignored (nothing is left to undo).
  void free(void* slab) noexcept override;
  /// The VMM call that failed last.
  [[nodiscard]] const char* allocating_call() const noexcept override { return failed_call_; }

  /// Backs up the chunks (`keep_contents`), then releases their physical memory (see the top of
  /// this file for failures). The caller has checked the state and waited for the device.
  void sleep(bool keep_contents);
  /// Maps new physical memory at every chunk's address and restores the backup.
  void wake();

  /// True from a sleep (even a failed one) until a wake succeeds.
  [[nodiscard]] bool asleep() const noexcept { return asleep_; }
  /// True when some chunk still holds physical memory: a sleep has something left to do.
  [[nodiscard]] bool holds_memory() const noexcept {
    for (const auto& [base, entry] : chunks_) {
      if (entry.mapped || entry.has_physical) {
        return true;
      }
    }
    return false;
  }
  /// Bytes of physical memory mapped now.
  [[nodiscard]] std::size_t resident_bytes() const noexcept { return resident_; }
  /// Bytes of the host backup (0: none).
  [[nodiscard]] std::size_t backup_bytes() const noexcept { return backup_.bytes(); }
  /// Chunks held (mapped or not).
  [[nodiscard]] std::size_t chunks() const noexcept { return chunks_.size(); }

  /// Captures into the pool in progress: sleep refuses while any is.
  [[nodiscard]] std::size_t open_captures() const noexcept { return captures_; }
  /// A capture into the pool begins.
  void capture_opened() noexcept { ++captures_; }
  /// A capture into the pool ended (or failed).
  void capture_closed() noexcept { --captures_; }

private:
  struct chunk {
    std::size_t bytes = 0;
    CUmemGenericAllocationHandle physical = 0;
    bool has_physical = false;
    bool mapped = false;
    std::size_t backup_offset = no_backup;
  };
  static constexpr std::size_t no_backup = static_cast<std::size_t>(-1);

  [[nodiscard]] CUmemAllocationProp properties() const noexcept {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    return prop;
  }
  [[nodiscard]] CUmemAccessDesc access() const noexcept {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device_;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return desc;
  }

  /// Creates (where it has none), maps and opens a chunk's physical memory; the status of the
  /// call that failed (failed_call_ names it), leaving what it did for the caller to undo.
  CUresult back(CUdeviceptr base, chunk& entry);
  /// Unmaps and releases what a chunk holds; false (and failed_call_) if a call failed.
  bool unback(CUdeviceptr base, chunk& entry, CUresult& status) noexcept;
  /// The stream the backup copies run on, made at the first use.
  cudaStream_t copy_stream();
  void make_backup();
  void restore_backup();

  std::map<CUdeviceptr, chunk> chunks_;
  host_backup backup_;
  stream_handle stream_; // backup copies; never captures
  std::size_t granularity_ = 0;
  std::size_t resident_ = 0;
  std::size_t captures_ = 0;
  int device_ = 0;
  bool asleep_ = false;
  const char* failed_call_ = "cuMemCreate";
};

inline cudaError_t vmm_chunks::allocate(void** slab, std::size_t size) {
  if (asleep_) { // pool::sleepable refuses first; a pool shared otherwise lands here
    throw state_error("graphcap: a sleepable pool cannot grow while it is asleep: call wake() "
                      "first");
  }
  const vmm_driver& driver = vmm();
  if (granularity_ == 0) {
    check(cudaGetDevice(&device_), "cudaGetDevice");
    const CUmemAllocationProp prop = properties();
    std::size_t granularity = 0;
    if (const CUresult status = driver.granularity.require(sleepable_needs)(
            &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        status != CUDA_SUCCESS) {
      failed_call_ = "cuMemGetAllocationGranularity";
      return static_cast<cudaError_t>(status);
    }
    granularity_ = granularity;
  }
  chunk entry;
  entry.bytes = (size + granularity_ - 1) / granularity_ * granularity_;
  CUdeviceptr base = 0;
  if (const CUresult status =
          driver.address_reserve.require(sleepable_needs)(&base, entry.bytes, 0, 0, 0);
      status != CUDA_SUCCESS) {
    failed_call_ = "cuMemAddressReserve";
    return static_cast<cudaError_t>(status);
  }
  CUresult status = CUDA_SUCCESS;
  try {
    status = back(base, entry);
    if (status == CUDA_SUCCESS) {
      chunks_.emplace(base, entry);
    }
  } catch (...) { // a missing driver function, or no memory for the record
    CUresult ignored = CUDA_SUCCESS;
    static_cast<void>(unback(base, entry, ignored));
    static_cast<void>(driver.address_free.find()(base, entry.bytes));
    throw;
  }
  if (status != CUDA_SUCCESS) {
    const char* const failed = failed_call_;
    CUresult ignored = CUDA_SUCCESS;
    static_cast<void>(unback(base, entry, ignored));
    static_cast<void>(driver.address_free.find()(base, entry.bytes));
    failed_call_ = failed;
    return static_cast<cudaError_t>(status);
  }
  *slab = vmm_pointer(base);
  return cudaSuccess;
}

inline void vmm_chunks::free(void* slab) noexcept {
  const auto found = chunks_.find(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(slab)));
  if (found == chunks_.end()) {
    return;
  }
  CUresult ignored = CUDA_SUCCESS;
  static_cast<void>(unback(found->first, found->second, ignored));
  if (const auto address_free = vmm().address_free.find()) {
    static_cast<void>(address_free(found->first, found->second.bytes));
  }
  chunks_.erase(found);
}

inline CUresult vmm_chunks::back(CUdeviceptr base, chunk& entry) {
  const vmm_driver& driver = vmm();
  const CUmemAllocationProp prop = properties();
  if (!entry.has_physical) {
    failed_call_ = "cuMemCreate";
    const CUresult status =
        driver.create.require(sleepable_needs)(&entry.physical, entry.bytes, &prop, 0);
    if (status != CUDA_SUCCESS) {
      return status;
    }
    entry.has_physical = true;
  }
  failed_call_ = "cuMemMap";
  if (const CUresult status =
          driver.map.require(sleepable_needs)(base, entry.bytes, 0, entry.physical, 0);
      status != CUDA_SUCCESS) {
    return status;
  }
  entry.mapped = true;
  resident_ += entry.bytes;
  failed_call_ = "cuMemSetAccess";
  const CUmemAccessDesc desc = access();
  return driver.set_access.require(sleepable_needs)(base, entry.bytes, &desc, 1);
}

inline bool vmm_chunks::unback(CUdeviceptr base, chunk& entry, CUresult& status) noexcept {
  const vmm_driver& driver = vmm();
  if (entry.mapped) {
    const auto unmap = driver.unmap.find();
    status = unmap != nullptr ? unmap(base, entry.bytes) : CUDA_ERROR_NOT_FOUND;
    if (status != CUDA_SUCCESS) {
      failed_call_ = "cuMemUnmap";
      return false;
    }
    entry.mapped = false;
    resident_ -= entry.bytes;
  }
  if (entry.has_physical) {
    const auto release = driver.release.find();
    status = release != nullptr ? release(entry.physical) : CUDA_ERROR_NOT_FOUND;
    if (status != CUDA_SUCCESS) {
      failed_call_ = "cuMemRelease";
      return false;
    }
    entry.has_physical = false;
  }
  return true;
}

inline cudaStream_t vmm_chunks::copy_stream() {
  if (!stream_) {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    stream_.reset(stream);
  }
  return stream_.get();
}

inline void vmm_chunks::make_backup() {
  std::size_t bytes = 0;
  for (const auto& [base, entry] : chunks_) {
    bytes += entry.mapped ? entry.bytes : 0;
  }
  if (bytes == 0) {
    return;
  }
  const relaxed_capture_mode_guard relaxed;
  const cudaStream_t stream = copy_stream();
  backup_.allocate(bytes);
  try {
    std::size_t offset = 0;
    for (const auto& [base, entry] : chunks_) {
      if (entry.mapped) {
        check(cudaMemcpyAsync(backup_.data() + offset, vmm_pointer(base), entry.bytes,
                              cudaMemcpyDeviceToHost, stream),
              "cudaMemcpyAsync");
        offset += entry.bytes;
      }
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  } catch (...) {
    backup_.reset();
    throw;
  }
  std::size_t offset = 0; // nothing can fail from here: the offsets go in
  for (auto& [base, entry] : chunks_) {
    if (entry.mapped) {
      entry.backup_offset = offset;
      offset += entry.bytes;
    }
  }
}

inline void vmm_chunks::restore_backup() {
  if (backup_.data() == nullptr) {
    return;
  }
  const relaxed_capture_mode_guard relaxed;
  const cudaStream_t stream = copy_stream();
  for (const auto& [base, entry] : chunks_) {
    if (entry.backup_offset != no_backup) {
      check(cudaMemcpyAsync(vmm_pointer(base), backup_.data() + entry.backup_offset, entry.bytes,
                            cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync");
    }
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

inline void vmm_chunks::sleep(bool keep_contents) {
  if (keep_contents && backup_.data() == nullptr) {
    make_backup(); // throws with nothing changed
  }
  asleep_ = true; // from here on, replays, captures and allocations are refused
  for (auto& [base, entry] : chunks_) {
    CUresult status = CUDA_SUCCESS;
    if (!unback(base, entry, status)) {
      throw_error(static_cast<cudaError_t>(status), failed_call_,
                  "the sleepable pool is asleep with some of its memory still held: call "
                  "sleep() again to release the rest, or wake()");
    }
  }
}

inline void vmm_chunks::wake() {
  std::vector<CUdeviceptr> taken; // chunks this wake backed: given back if it fails
  taken.reserve(chunks_.size());
  try {
    for (auto& [base, entry] : chunks_) {
      if (entry.mapped) {
        continue;
      }
      taken.push_back(base);
      if (const CUresult status = back(base, entry); status != CUDA_SUCCESS) {
        if (status == CUDA_ERROR_OUT_OF_MEMORY) {
          vmm_check<out_of_memory_error>(status, failed_call_,
                                         "a sleepable pool's wake could not get its memory back: "
                                         "it stays asleep and keeps its backup; free memory and "
                                         "call wake() again");
        }
        vmm_check(status, failed_call_,
                  "the sleepable pool stays asleep and keeps its backup: call wake() again");
      }
    }
    restore_backup();
  } catch (...) {
    for (const CUdeviceptr base : taken) {
      CUresult ignored = CUDA_SUCCESS;
      static_cast<void>(unback(base, chunks_.at(base), ignored));
    }
    throw;
  }
  backup_.reset();
  for (auto& [base, entry] : chunks_) {
    entry.backup_offset = no_backup;
  }
  asleep_ = false;
}

} // namespace graphcap::detail::pool
