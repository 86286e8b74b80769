// graphcap/cuda/detail/kernel_parameters.hpp - a kernel node's parameters, for the wings that
// read them (liveness::check's scan, the rebinder's copy, a family's patch switch): where each
// parameter sits in the kernel's parameter block (cuFuncGetParamInfo), and where a launch gave
// their bytes, one pointer per parameter (kernelParams) or one packed buffer (`extra`). One
// reader of the layout, so that the three wings agree on it (#49).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstring>
#include <vector>

namespace graphcap::detail {

/// The parameter buffer of a launch made with CU_LAUNCH_PARAM_BUFFER_POINTER, else null.
[[nodiscard]] inline const unsigned char* packed_kernel_parameters(void** extra) noexcept {
  for (void** option = extra; option != nullptr && *option != CU_LAUNCH_PARAM_END; option += 2) {
    if (*option == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      return static_cast<const unsigned char*>(option[1]);
    }
  }
  return nullptr;
}

/// One parameter's place in a kernel's parameter block.
struct parameter_slot {
  std::size_t offset = 0; ///< its first byte in the block
  std::size_t size = 0;   ///< its bytes
};

/// Appends the parameters of `function` to `slots`, in order, through `param_info` (the
/// driver's cuFuncGetParamInfo, resolved by the caller for its own message). Returns
/// CUDA_SUCCESS, or the first status other than CUDA_ERROR_INVALID_VALUE (which ends the list:
/// past the last parameter), for the caller to report.
template <class ParamInfo>
[[nodiscard]] CUresult read_parameter_layout(ParamInfo param_info, CUfunction function,
                                             std::vector<parameter_slot>& slots) {
  for (std::size_t index = 0;; ++index) {
    parameter_slot slot;
    const CUresult status = param_info(function, index, &slot.offset, &slot.size);
    if (status == CUDA_ERROR_INVALID_VALUE) {
      return CUDA_SUCCESS;
    }
    if (status != CUDA_SUCCESS) {
      return status;
    }
    slots.push_back(slot);
  }
}

/// The bytes of a block holding every slot: the largest offset + size.
[[nodiscard]] inline std::size_t parameter_block_bytes(const std::vector<parameter_slot>& slots) {
  std::size_t end = 0;
  for (const parameter_slot& slot : slots) {
    end = slot.offset + slot.size > end ? slot.offset + slot.size : end;
  }
  return end;
}

/// Parameter `index` (at `slot`) of a launch whose parameters are `kernel_params` or the packed
/// buffer of `extra`: where its bytes are, or null where the launch gave none.
[[nodiscard]] inline const void* parameter_source(void** kernel_params, void** extra,
                                                  const parameter_slot& slot,
                                                  std::size_t index) noexcept {
  if (kernel_params != nullptr) {
    return kernel_params[index];
  }
  const unsigned char* packed = packed_kernel_parameters(extra);
  return packed != nullptr ? packed + slot.offset : nullptr;
}

/// Copies every parameter of a launch (`kernel_params`, or the packed buffer of `extra`) into
/// `block` (parameter_block_bytes(slots) bytes) at its offset.
inline void copy_parameters(void** kernel_params, void** extra,
                            const std::vector<parameter_slot>& slots, unsigned char* block) {
  for (std::size_t index = 0; index < slots.size(); ++index) {
    const void* source = parameter_source(kernel_params, extra, slots[index], index);
    if (source != nullptr && slots[index].size != 0) {
      std::memcpy(block + slots[index].offset, source, slots[index].size);
    }
  }
}

} // namespace graphcap::detail
