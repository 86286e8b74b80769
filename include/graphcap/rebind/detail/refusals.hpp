// graphcap/rebind/detail/refusals.hpp - the rebinder's refusals, each thrown before anything is
// patched: what was wrong, and what to do.
#pragma once

#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/rebind/detail/sites.hpp>
#include <graphcap/rebind/rebind_error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace graphcap::detail::rebind {

[[noreturn]] GRAPHCAP_COLD inline void throw_not_ready(const char* what, graph_state state,
                                                       bool keeps_graph) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what + ": the graph is " +
                    std::string{to_string(state)} + (keeps_graph ? "" : " and keeps no template") +
                    ". A rebinder needs a graph constructed with graphcap::keep_graph and "
                    "captured (its nodes are patched through the template's node handles)");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_capture_open(const char* what) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what +
                    " while a capture of the graph is open; end it first");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_stale(const char* what) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what +
                    ": the graph was recaptured or reset since the rebinder scanned it, and the "
                    "nodes it knew are gone. Call rescan() after the new capture");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_no_extent(std::uintptr_t input) {
  throw rebind_error("graphcap::rebinder: input " + rebind_hex(input) +
                     " is not in memory CUDA allocated (or was freed), so its extent is unknown; "
                     "register it with its size: rebind_input{pointer, bytes}");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_overlap(std::uintptr_t input, std::uintptr_t other) {
  throw rebind_error("graphcap::rebinder: inputs " + rebind_hex(input) + " and " +
                     rebind_hex(other) +
                     " overlap: an address in both could not be moved with one of them alone. "
                     "Register them with sizes that do not overlap");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_unknown_input(std::uintptr_t from,
                                                           std::size_t registered) {
  throw rebind_error("graphcap::rebinder::rebind: " + rebind_hex(from) +
                     " is not the address of a registered input (" + std::to_string(registered) +
                     " registered). Name an input by its current address: after a rebind, the "
                     "address it was moved to");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_moved_twice(std::uintptr_t from) {
  throw rebind_error("graphcap::rebinder::rebind: input " + rebind_hex(from) +
                     " is moved twice in one call");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_size_unknown(std::uintptr_t to) {
  throw rebind_error("graphcap::rebinder::rebind: the new address " + rebind_hex(to) +
                     " is not in memory CUDA allocated, so its size is unknown; give it: "
                     "rebind({from, to, bytes})");
}

[[noreturn]] GRAPHCAP_COLD inline void throw_smaller(std::uintptr_t from, std::size_t extent,
                                                     std::uintptr_t to, std::size_t available) {
  throw rebind_error("graphcap::rebinder::rebind: the new buffer at " + rebind_hex(to) + " has " +
                     std::to_string(available) + " bytes, fewer than the " +
                     std::to_string(extent) + " the graph may read from input " + rebind_hex(from));
}

/// The bytes available from `to`: `given`, or asked from CUDA when unknown (`unknown`).
[[nodiscard]] inline std::size_t bytes_at(std::uintptr_t to, std::size_t given,
                                          std::size_t unknown) {
  if (given != unknown) {
    return given;
  }
  const auto allocation = allocation_at(to);
  if (!allocation) [[unlikely]] {
    throw_size_unknown(to);
  }
  return allocation->base + allocation->bytes - to;
}

} // namespace graphcap::detail::rebind
