// graphcap/repeat.hpp - the 0.2 entry header of device_loop() (then repeat()):
// <graphcap/control_flow/device_loop.hpp>. It stays, so that programs that include it compile.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/control_flow/device_loop.hpp>
