// graphcap/rebind/rebind_error.hpp - what graphcap::rebinder throws for a rebinding it refuses
// (<graphcap/rebind.hpp>).
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/error.hpp>

namespace graphcap {

/// A rebinding refused before anything was patched: an address that is no registered input, a
/// new buffer known to be smaller than the input it replaces, inputs that overlap, an input used
/// where the rebinder cannot patch it (a child graph node, the bodies of conditional nodes it was
/// not told about). The message names the address and what to do. The executable, the kept
/// template and the liveness tracking are as before the call.
class rebind_error : public error {
public:
  using error::error;
};

} // namespace graphcap
