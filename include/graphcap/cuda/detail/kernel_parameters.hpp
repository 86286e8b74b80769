// graphcap/cuda/detail/kernel_parameters.hpp - where a kernel node's parameter bytes are, for
// the wings that read them (liveness::check's scan, the rebinder's): a launch gives them either
// one pointer per parameter (kernelParams) or one packed buffer (`extra`).
#pragma once

#include <cuda.h>

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

} // namespace graphcap::detail
