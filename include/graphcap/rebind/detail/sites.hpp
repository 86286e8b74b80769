// graphcap/rebind/detail/sites.hpp - where a captured graph holds its registered inputs: the one
// scan behind graphcap::rebinder, and the copies of the node parameters it patches.
//
// Every node of the template, of its child graphs and of the conditional bodies the graph's
// policies recorded is listed once. A kernel node's parameters are read through the driver
// (cuGraphKernelNodeGetParams, laid out by cuFuncGetParamInfo), a memcpy node's source and
// destination and a memset node's destination through the runtime. Each pointer-sized word at an
// 8-byte-aligned offset of a parameter (inside structs too) that lies in a registered input's
// extent is a site; a value outside every registered extent is never one, whatever it looks
// like. The rebinder keeps its own copy of each patched node's parameters: the driver's are read
// once, never written (llama.cpp #12152 wrote into them).
#pragma once

#include <graphcap/core/policy.hpp>
#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/cuda/detail/kernel_parameters.hpp>
#include <graphcap/rebind/rebind_error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphcap::detail::rebind {

/// Whether a graph type is a basic_graph (the one kind the rebinder patches).
template <class Graph>
inline constexpr bool is_basic_graph = false;
template <class Mode, class Pool, class Annot, class Liveness>
inline constexpr bool is_basic_graph<graphcap::basic_graph<Mode, Pool, Annot, Liveness>> = true;

/// An input's address as the pointer the rebinder's calls name it by.
[[nodiscard]] inline const void* as_pointer(std::uintptr_t address) noexcept {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the registry keeps addresses as integers
  return reinterpret_cast<const void*>(address);
}

/// The tag of a rebinder of one segment of several: inputs it does not hold are dropped.
struct held_only_t {};

/// How the rebinder words its need of a driver function (driver_function::require).
inline constexpr std::string_view rebind_needs = "graphcap's rebinder needs";

/// Throws cuda_error for a failed driver call.
template <class = void>
void rebind_driver_check(CUresult status, const char* call) {
  if (status != CUDA_SUCCESS) [[unlikely]] {
    throw_error(static_cast<cudaError_t>(status), call);
  }
}

/// "0x7f3a52000000".
template <class = void>
std::string rebind_hex(std::uintptr_t address) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), digits[address % 16]);
    address /= 16;
  } while (address != 0);
  return "0x" + text;
}

/// The CUDA allocation holding an address: its first byte and size.
struct allocation_range {
  std::uintptr_t base = 0;
  std::size_t bytes = 0;
};

/// The allocation CUDA knows at `address`, or none (not CUDA memory, or freed).
template <class = void>
std::optional<allocation_range> allocation_at(std::uintptr_t address) {
  const auto query = driver().pointer_get_attribute.require(rebind_needs);
  CUdeviceptr base = 0;
  CUresult status = query(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address);
  if (status == CUDA_ERROR_INVALID_VALUE) {
    return std::nullopt;
  }
  rebind_driver_check(status, "cuPointerGetAttribute (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)");
  std::size_t bytes = 0;
  status = query(&bytes, CU_POINTER_ATTRIBUTE_RANGE_SIZE, address);
  rebind_driver_check(status, "cuPointerGetAttribute (CU_POINTER_ATTRIBUTE_RANGE_SIZE)");
  return allocation_range{static_cast<std::uintptr_t>(base), bytes};
}

enum class node_kind : std::uint8_t { kernel, memcpy, memset };

/// Where a memcpy or memset node holds an address (a site's `at` for those kinds).
inline constexpr std::uint32_t copy_source = 0;
inline constexpr std::uint32_t copy_destination = 1;
inline constexpr std::uint32_t set_destination = 2;

/// A node the rebinder patches, with its own copy of the node's parameters.
template <class = void>
struct basic_patchable_node {
  cudaGraphNode_t node = nullptr;
  node_kind kind = node_kind::kernel;
  bool template_stale = false; // the executable was patched, the template not yet
  std::uint32_t stamp = 0;     // the last rebind() that touched it
  CUDA_KERNEL_NODE_PARAMS_v2 kernel{};
  std::vector<unsigned char> bytes; // the kernel's parameter block, as cuFuncGetParamInfo lays it
  std::vector<std::size_t> offsets; // each parameter's offset in it
  std::vector<std::size_t> sizes;   // and its size
  std::vector<void*> arguments;     // kernelParams: one pointer into `bytes` per parameter
  cudaMemcpy3DParms copy{};
  cudaMemsetParams set{};

  /// The address held at `at` (a byte offset of a kernel's block, else copy_source, ...).
  [[nodiscard]] std::uint64_t word(std::uint32_t at) const noexcept {
    if (kind == node_kind::kernel) {
      std::uint64_t value = 0;
      std::memcpy(&value, bytes.data() + at, sizeof value);
      return value;
    }
    const void* pointer = at == copy_source        ? copy.srcPtr.ptr
                          : at == copy_destination ? copy.dstPtr.ptr
                                                   : set.dst;
    return reinterpret_cast<std::uintptr_t>(pointer);
  }

  void set_word(std::uint32_t at, std::uint64_t value) noexcept {
    if (kind == node_kind::kernel) {
      std::memcpy(bytes.data() + at, &value, sizeof value);
      return;
    }
    void* pointer = nullptr; // the bytes of the word: no integer-to-pointer cast
    static_assert(sizeof pointer == sizeof value);
    std::memcpy(static_cast<void*>(&pointer), &value, sizeof pointer);
    (at == copy_source        ? copy.srcPtr.ptr
     : at == copy_destination ? copy.dstPtr.ptr
                              : set.dst) = pointer;
  }
};
using patchable_node = basic_patchable_node<>;

/// Where `at` lies in `node`, for a picture: "arg 2", "arg 2 +8" (a word inside a by-value
/// struct), "source", "destination"; then " (input 0x...)" with the input's `address`.
template <class = void>
std::string site_text(const patchable_node& node, std::uint32_t at, std::uintptr_t address) {
  std::string text;
  if (node.kind != node_kind::kernel) {
    text = at == copy_source ? "source" : "destination";
  } else {
    for (std::size_t i = 0; i < node.offsets.size() && text.empty(); ++i) {
      if (at >= node.offsets[i] && at < node.offsets[i] + node.sizes[i]) {
        text = "arg " + std::to_string(i);
        if (at != node.offsets[i]) {
          text += " +" + std::to_string(at - node.offsets[i]);
        }
      }
    }
  }
  char hex[2 + 2 * sizeof address + 1] = "0x";
  const std::to_chars_result end = std::to_chars(hex + 2, hex + sizeof hex - 1, address, 16);
  return text + " (input " + std::string(hex, end.ptr) + ")";
}

/// One place a registered input's address is held: a node (index into the patchable nodes) and
/// where in it.
struct site {
  std::uint32_t node;
  std::uint32_t at;
};

/// A registered input: the extent the graph may read from its current address, and its sites.
template <class = void>
struct basic_bound_input {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  std::vector<site> sites;

  [[nodiscard]] bool contains(std::uint64_t value) const noexcept {
    return value >= address && value - address < bytes;
  }
};
using bound_input = basic_bound_input<>;

/// What `node` holds of `inputs` (their sites index `nodes`), for rebinder::note().
template <class = void>
std::string node_note(cudaGraphNode_t node, const std::vector<bound_input>& inputs,
                      const std::vector<patchable_node>& nodes) {
  std::string text;
  for (const bound_input& input : inputs) {
    for (const site& place : input.sites) {
      if (nodes[place.node].node == node) {
        text += text.empty() ? "rebindable: " : ", ";
        text += site_text(nodes[place.node], place.at, input.address);
      }
    }
  }
  return text;
}

/// A node of the template, a child graph or a body, with its type.
struct listed_node {
  cudaGraphNode_t node;
  CUgraphNodeType type;
  bool in_child; // inside a child graph node: CUDA patches those only as a whole graph
};

/// Appends every node of `graph`, then those of its child graphs.
template <class = void>
void list_nodes(cudaGraph_t graph, bool in_child, std::vector<listed_node>& nodes) {
  const auto node_type = driver().graph_node_get_type.require(rebind_needs);
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> listed(count);
  check(cudaGraphGetNodes(graph, listed.data(), &count), "cudaGraphGetNodes");
  const std::size_t first = nodes.size();
  for (std::size_t i = 0; i < count; ++i) {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    rebind_driver_check(node_type(listed[i], &type), "cuGraphNodeGetType");
    nodes.push_back({listed[i], type, in_child});
  }
  for (std::size_t i = first; i < first + count; ++i) {
    if (nodes[i].type == CU_GRAPH_NODE_TYPE_GRAPH) {
      cudaGraph_t child = nullptr;
      check(cudaGraphChildGraphNodeGetGraph(nodes[i].node, &child),
            "cudaGraphChildGraphNodeGetGraph");
      list_nodes(child, true, nodes);
    }
  }
}

/// A kernel node's parameters, copied into the rebinder's own storage.
template <class = void>
patchable_node copy_kernel_node(cudaGraphNode_t node,
                                std::unordered_map<CUfunction, patchable_node>& layouts) {
  const driver_api& api = driver();
  patchable_node copy;
  copy.node = node;
  copy.kind = node_kind::kernel;
  rebind_driver_check(api.graph_kernel_node_get_params.require(rebind_needs)(node, &copy.kernel),
                      "cuGraphKernelNodeGetParams");
  CUfunction function = copy.kernel.func;
  if (function == nullptr && copy.kernel.kern != nullptr) {
    rebind_driver_check(api.kernel_get_function.require(rebind_needs)(&function, copy.kernel.kern),
                        "cuKernelGetFunction");
  }
  auto layout = layouts.find(function);
  if (layout == layouts.end()) {
    patchable_node shape; // offsets and sizes, and the block's size in bytes.size()
    std::vector<parameter_slot> slots;
    rebind_driver_check(
        read_parameter_layout(api.func_get_param_info.require(rebind_needs), function, slots),
        "cuFuncGetParamInfo");
    for (const parameter_slot& slot : slots) {
      shape.offsets.push_back(slot.offset);
      shape.sizes.push_back(slot.size);
    }
    shape.bytes.resize(parameter_block_bytes(slots));
    layout = layouts.emplace(function, std::move(shape)).first;
  }
  copy.offsets = layout->second.offsets;
  copy.sizes = layout->second.sizes;
  copy.bytes.resize(layout->second.bytes.size());
  for (std::size_t index = 0; index < copy.offsets.size(); ++index) {
    const parameter_slot slot{copy.offsets[index], copy.sizes[index]};
    const void* source = parameter_source(copy.kernel.kernelParams, copy.kernel.extra, slot, index);
    if (source != nullptr && slot.size != 0) {
      std::memcpy(copy.bytes.data() + slot.offset, source, slot.size);
    }
    copy.arguments.push_back(copy.bytes.data() + slot.offset);
  }
  copy.kernel.kernelParams = copy.arguments.data();
  copy.kernel.extra = nullptr; // the rebinder passes the parameters one by one
  return copy;
}

/// The words of a patchable node that may hold addresses: (where, value).
template <class Visit>
void for_each_word(const patchable_node& node, Visit&& visit) {
  if (node.kind != node_kind::kernel) {
    if (node.kind == node_kind::memset) {
      visit(set_destination, node.word(set_destination));
    } else {
      if (node.copy.srcArray == nullptr) {
        visit(copy_source, node.word(copy_source));
      }
      if (node.copy.dstArray == nullptr) {
        visit(copy_destination, node.word(copy_destination));
      }
    }
    return;
  }
  for (std::size_t index = 0; index < node.offsets.size(); ++index) {
    const std::size_t begin = node.offsets[index];
    const std::size_t end = begin + node.sizes[index];
    // Pointers sit at 8-byte-aligned offsets of the block, inside structs too.
    for (std::size_t at = (begin + 7) / 8 * 8; at + 8 <= end; at += 8) {
      visit(static_cast<std::uint32_t>(at), node.word(static_cast<std::uint32_t>(at)));
    }
  }
}

} // namespace graphcap::detail::rebind
