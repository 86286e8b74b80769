// graphcap/rebind/detail/scan.hpp - the rebinder's one pass over a captured graph: the nodes it
// will patch and every site of every registered input (rebind/detail/sites.hpp says what a site
// is). Refuses, before anything is patched, what it cannot patch: an input used inside a child
// graph, conditional nodes whose bodies nobody recorded, an input the graph does not hold.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/rebind/detail/sites.hpp>
#include <graphcap/rebind/rebind_error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace graphcap::detail::rebind {

/// What the scan reads: the template, the conditional bodies the graph's policies recorded
/// (`bodies_known`: whether any policy records them), the graph's own memory (its pool's slabs;
/// memory allocation nodes are found in the graph), and whether every external allocation the
/// graph holds is an input (graphcap::all_inputs) or only the registered ones.
struct scan_request {
  cudaGraph_t graph = nullptr;
  std::span<const cudaGraph_t> bodies;
  bool bodies_known = false;
  std::vector<allocation_range> internal;
  bool all_inputs = false;
  bool held_only = false; ///< drop the inputs the graph does not hold (one segment of several)
};

/// The nodes to patch, with the inputs' sites pointing into them.
struct scan_result {
  std::vector<patchable_node> nodes;
};

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_unknown_bodies(std::size_t conditionals, bool bodies_known) {
  throw rebind_error(
      "graphcap::rebinder: the graph has " + std::to_string(conditionals) +
      " conditional node(s) (if_, if_else, switch_, while_, device_loop), and CUDA 13.0 lists no "
      "conditional node's bodies after the capture. " +
      (bodies_known ? std::string{"The graph's policies recorded none of them"}
                    : std::string{"This graph's policies do not record them"}) +
      ", so inputs used inside the bodies could not be found and patched. Use a graph with "
      "liveness::check (it records every body during the capture), or recapture() the graph");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_in_child(std::uintptr_t input) {
  throw rebind_error("graphcap::rebinder: input " + rebind_hex(input) +
                     " is used inside a child graph node (graphcap::embed, "
                     "cudaGraphAddChildGraphNode). CUDA patches a child graph's nodes in an "
                     "executable only as a whole graph (cudaGraphExecChildGraphNodeSetParams), "
                     "which the rebinder does not do; recapture() the graph instead");
}

template <class = void>
[[noreturn]] GRAPHCAP_COLD void throw_not_held(std::uintptr_t input, std::size_t bytes) {
  throw rebind_error("graphcap::rebinder: the graph holds no address in [" + rebind_hex(input) +
                     ", +" + std::to_string(bytes) +
                     " bytes): it is not an input of this capture (no kernel parameter, memcpy or "
                     "memset node names it). A pointer the graph reads from device memory cannot "
                     "be rebound: write the new address into that memory instead");
}

/// The pass: fills the sites of `inputs` (every one of them, or throws), and with
/// request.all_inputs adds an input per external allocation the graph holds.
template <class = void>
scan_result scan(const scan_request& request, std::vector<bound_input>& inputs) {
  std::vector<listed_node> listed;
  list_nodes(request.graph, false, listed);
  const auto conditionals = static_cast<std::size_t>(
      std::count_if(listed.begin(), listed.end(), [](const listed_node& node) {
        return node.type == CU_GRAPH_NODE_TYPE_CONDITIONAL;
      }));
  if (conditionals != 0 && request.bodies.empty()) {
    throw_unknown_bodies(conditionals, request.bodies_known);
  }
  for (const cudaGraph_t body : request.bodies) {
    list_nodes(body, false, listed);
  }
  std::vector<allocation_range> internal = request.internal;
  for (const listed_node& node : listed) {
    if (node.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      cudaMemAllocNodeParams params{};
      check(cudaGraphMemAllocNodeGetParams(node.node, &params), "cudaGraphMemAllocNodeGetParams");
      internal.push_back({reinterpret_cast<std::uintptr_t>(params.dptr), params.bytesize});
    }
  }
  const auto is_internal = [&](std::uint64_t value) {
    return std::any_of(internal.begin(), internal.end(), [&](const allocation_range& range) {
      return value >= range.base && value - range.base < range.bytes;
    });
  };
  for (bound_input& input : inputs) {
    input.sites.clear();
  }
  scan_result result;
  std::unordered_map<CUfunction, patchable_node> layouts;
  std::unordered_map<std::uint64_t, bool> not_cuda_memory; // all_inputs: each value asked once
  for (const listed_node& node : listed) {
    patchable_node copy;
    if (node.type == CU_GRAPH_NODE_TYPE_KERNEL) {
      copy = copy_kernel_node(node.node, layouts);
    } else if (node.type == CU_GRAPH_NODE_TYPE_MEMCPY) {
      copy.node = node.node;
      copy.kind = node_kind::memcpy;
      check(cudaGraphMemcpyNodeGetParams(node.node, &copy.copy), "cudaGraphMemcpyNodeGetParams");
    } else if (node.type == CU_GRAPH_NODE_TYPE_MEMSET) {
      copy.node = node.node;
      copy.kind = node_kind::memset;
      check(cudaGraphMemsetNodeGetParams(node.node, &copy.set), "cudaGraphMemsetNodeGetParams");
    } else {
      continue;
    }
    const auto index = static_cast<std::uint32_t>(result.nodes.size());
    bool holds_input = false;
    for_each_word(copy, [&](std::uint32_t at, std::uint64_t value) {
      auto input = std::find_if(inputs.begin(), inputs.end(),
                                [&](const bound_input& known) { return known.contains(value); });
      if (input == inputs.end() && request.all_inputs && value >= 4096 && !is_internal(value) &&
          !not_cuda_memory.contains(value)) {
        if (const auto allocation = allocation_at(value)) {
          inputs.push_back({allocation->base, allocation->bytes, {}});
          input = std::prev(inputs.end());
        } else {
          not_cuda_memory.emplace(value, true);
        }
      }
      if (input == inputs.end()) {
        return;
      }
      if (node.in_child) {
        throw_in_child(input->address);
      }
      input->sites.push_back({index, at});
      holds_input = true;
    });
    if (holds_input) {
      result.nodes.push_back(std::move(copy));
    }
  }
  if (request.held_only) {
    std::erase_if(inputs, [](const bound_input& input) { return input.sites.empty(); });
  }
  for (const bound_input& input : inputs) {
    if (input.sites.empty()) {
      throw_not_held(input.address, input.bytes);
    }
  }
  return result;
}

} // namespace graphcap::detail::rebind
