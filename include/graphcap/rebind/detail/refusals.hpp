// graphcap/rebind/detail/refusals.hpp - the rebinder's refusals, each thrown before anything is
// patched: what was wrong, and what to do; the checks of a registration and of a rebind's moves.
#pragma once

#include <graphcap/error.hpp>
#include <graphcap/fwd.hpp>
#include <graphcap/rebind/detail/sites.hpp>
#include <graphcap/rebind/rebind_error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace graphcap::detail::rebind {

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_not_ready(const char* what, graph_state state,
                                                bool keeps_graph) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what + ": the graph is " +
                    std::string{to_string(state)} + (keeps_graph ? "" : " and keeps no template") +
                    ". A rebinder needs a graph constructed with graphcap::keep_graph and "
                    "captured (its nodes are patched through the template's node handles)");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_capture_open(const char* what) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what +
                    " while a capture of the graph is open; end it first");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_stale(const char* what) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what +
                    ": the graph was recaptured or reset since the rebinder scanned it, and the "
                    "nodes it knew are gone. Call rescan() after the new capture");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_no_extent(std::uintptr_t input) {
  throw rebind_error("graphcap::rebinder: input " + rebind_hex(input) +
                     " is not in memory CUDA allocated (or was freed), so its extent is unknown; "
                     "register it with its size: rebind_input{pointer, bytes}");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_overlap(std::uintptr_t input, std::uintptr_t other) {
  throw rebind_error("graphcap::rebinder: inputs " + rebind_hex(input) + " and " +
                     rebind_hex(other) +
                     " overlap: an address in both could not be moved with one of them alone. "
                     "Register them with sizes that do not overlap");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_unknown_input(std::uintptr_t from, std::size_t registered) {
  throw rebind_error("graphcap::rebinder::rebind: " + rebind_hex(from) +
                     " is not the address of a registered input (" + std::to_string(registered) +
                     " registered). Name an input by its current address: after a rebind, the "
                     "address it was moved to");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_moved_twice(std::uintptr_t from) {
  throw rebind_error("graphcap::rebinder::rebind: input " + rebind_hex(from) +
                     " is moved twice in one call");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_null_target(std::uintptr_t from) {
  throw rebind_error("graphcap::rebinder::rebind: input " + rebind_hex(from) +
                     " is moved to a null address, which the graph would read as address 0; "
                     "give the new buffer's address");
}

/// The rebinder's graph: null once the rebinder is moved from, so that every call then refuses.
template <class Graph>
class graph_link {
public:
  explicit graph_link(Graph* graph) noexcept : graph_(graph) {}
  graph_link(const graph_link&) = delete;
  graph_link& operator=(const graph_link&) = delete;
  graph_link(graph_link&& other) noexcept : graph_(std::exchange(other.graph_, nullptr)) {}
  graph_link& operator=(graph_link&& other) noexcept {
    graph_ = std::exchange(other.graph_, nullptr);
    return *this;
  }
  ~graph_link() = default;
  Graph* operator->() const noexcept { return graph_; }
  Graph& operator*() const noexcept { return *graph_; }
  explicit operator bool() const noexcept { return graph_ != nullptr; }

private:
  Graph* graph_;
};

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_moved_from(const char* what) {
  throw state_error(std::string{"graphcap::rebinder: cannot "} + what +
                    ": this rebinder was moved from, and the one it was moved to holds its "
                    "inputs; use that one");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_size_unknown(std::uintptr_t to) {
  throw rebind_error("graphcap::rebinder::rebind: the new address " + rebind_hex(to) +
                     " is not in memory CUDA allocated, so its size is unknown; give it: "
                     "rebind({from, to, bytes})");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_smaller(std::uintptr_t from, std::size_t extent,
                                              std::uintptr_t to, std::size_t available) {
  throw rebind_error("graphcap::rebinder::rebind: the new buffer at " + rebind_hex(to) + " has " +
                     std::to_string(available) + " bytes, fewer than the " +
                     std::to_string(extent) + " the graph may read from input " + rebind_hex(from));
}

/// The bytes available from `to`: `given`, or asked from CUDA when unknown (`unknown`).
template <class = void>
[[nodiscard]] std::size_t bytes_at(std::uintptr_t to, std::size_t given, std::size_t unknown) {
  if (given != unknown) {
    return given;
  }
  const auto allocation = allocation_at(to);
  if (!allocation) [[unlikely]] {
    throw_size_unknown(to);
  }
  return allocation->base + allocation->bytes - to;
}

/// Registers the input at `address` (`bytes` long; `to_end`: to its allocation's end) after the
/// `inputs` known; rebind_error, nothing registered, for an unknown extent or an overlap.
template <class = void>
void register_input(std::vector<bound_input>& inputs, std::uintptr_t address, std::size_t bytes,
                    std::size_t to_end) {
  if (bytes == to_end) {
    const auto allocation = allocation_at(address);
    if (!allocation) [[unlikely]] {
      throw_no_extent(address);
    }
    bytes = allocation->base + allocation->bytes - address;
  }
  for (const bound_input& known : inputs) {
    if (address < known.address + known.bytes && known.address < address + bytes) {
      throw_overlap(address, known.address);
    }
  }
  inputs.push_back({address, bytes, {}});
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_default_copy_to_host(std::uintptr_t from, std::uintptr_t to) {
  throw rebind_error("graphcap::rebinder::rebind: input " + rebind_hex(from) +
                     " is an operand of a cudaMemcpyDefault copy, and the new address " +
                     rebind_hex(to) +
                     " is not in memory CUDA allocated: CUDA accepts the patch and the next "
                     "launch fails with cudaErrorIllegalAddress, which loses the context. Move it "
                     "to device, pinned (cudaMallocHost) or managed memory");
}

/// Whether `input` is an operand of a cudaMemcpyDefault copy.
template <class = void>
[[nodiscard]] bool in_default_copy(const bound_input& input,
                                   const std::vector<patchable_node>& nodes) noexcept {
  return std::any_of(input.sites.begin(), input.sites.end(), [&](const site& place) {
    const patchable_node& node = nodes[place.node];
    return node.kind == node_kind::memcpy && node.copy.kind == cudaMemcpyDefault;
  });
}

/// Fills `which` with the index of each move's input in `inputs`; throws rebind_error before
/// anything changes: an unknown input, one moved twice, a null target, a smaller new buffer, an
/// operand of a cudaMemcpyDefault copy moved out of CUDA memory.
template <class Move>
void resolve_moves(std::span<const Move> moves, const std::vector<bound_input>& inputs,
                   const std::vector<patchable_node>& nodes, std::vector<std::size_t>& which,
                   std::size_t unknown_size) {
  which.clear();
  for (const Move& move : moves) {
    const auto from = reinterpret_cast<std::uintptr_t>(move.from);
    const auto input = std::find_if(inputs.begin(), inputs.end(), [&](const bound_input& known) {
      return known.address == from;
    });
    if (input == inputs.end()) [[unlikely]] {
      throw_unknown_input(from, inputs.size());
    }
    const auto index = static_cast<std::size_t>(input - inputs.begin());
    if (std::find(which.begin(), which.end(), index) != which.end()) [[unlikely]] {
      throw_moved_twice(from);
    }
    const auto to = reinterpret_cast<std::uintptr_t>(move.to);
    if (to == 0) [[unlikely]] {
      throw_null_target(from); // with or without a size: the graph would read address 0
    }
    const std::size_t available = bytes_at(to, move.to_bytes, unknown_size);
    if (available < input->bytes) [[unlikely]] {
      throw_smaller(from, input->bytes, to, available);
    }
    // Without a size, bytes_at found the allocation. The H200 accepts such a copy's operand in
    // pageable memory and faults at the launch (benchmark/probes/setparams_refusals.cu).
    if (move.to_bytes != unknown_size && in_default_copy(*input, nodes) && !allocation_at(to))
        [[unlikely]] {
      throw_default_copy_to_host(from, to);
    }
    which.push_back(index);
  }
}

} // namespace graphcap::detail::rebind
