// graphcap/families/detail/node_patch.hpp - graph_family's patch switch: each key's node
// parameters, read once from its template, and the switch of a group's executable from the key it
// holds to another key of the group by setting only the nodes whose parameters differ.
//
// cudaGraphExecUpdate compares every node of a template with the executable's (1.2-1.5 us per
// node on the H200); one cudaGraphExecKernelNodeSetParams costs about 0.3 us, and most nodes of a
// shape switch change only their grid and a few argument words. So each key keeps its nodes'
// parameters (a kernel's function, shape, dynamic shared memory and argument bytes, a memcpy's or
// memset's parameters, an event node's event), in the order
// topology.hpp signs them (cudaGraphGetNodes); a switch compares the target key's copy with the
// copy of the key the executable holds (the last one switched to), node by node, and sets the nodes
// that differ through the handles of the template the executable was instantiated from (CUDA's
// set-params take those). Each key also lists the nodes where it differs from its group's first
// key (its base, compared once as it joins): two keys of one base can differ only where one of
// them differs from the base, so a switch compares those nodes alone (a switch that changes one
// node of 201 compares two, not 201). Where set-params cannot express a change (another context, a
// memcpy or memset that is not 1-D, another copy kind, CUDA refusing a set: docs/rebinding.md's
// table of refusals) the switch falls back to the update, which overwrites every node: the
// executable's state after a switch is the same either way (a test on the double compares them
// field by field). Templates carry no enable state: every key's node is enabled, and a switch never
// calls cudaGraphNodeSetEnabled.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/driver.hpp>
#include <graphcap/cuda/detail/kernel_parameters.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace graphcap::detail::families {

/// What a switch can set of a node.
enum class patch_kind : std::uint8_t { empty, kernel, memcpy, memset, event_record, event_wait };

/// One node of a key's template, as captured: the kind, then the parameters of that kind only
/// (a union: a switch reads two cache lines of a kernel node per key, not every kind's fields).
struct node_params {
  patch_kind kind = patch_kind::empty;
  std::size_t first_byte = 0; ///< a kernel's parameter block in key_params::bytes
  std::size_t byte_count = 0;
  union {
    CUDA_KERNEL_NODE_PARAMS_v2 kernel; ///< kernelParams point into key_params::arguments' targets
    cudaMemcpy3DParms copy;
    cudaMemsetParams set;
    cudaEvent_t event; ///< an event record or wait node's event
  };
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): a union has one member initialized
  node_params() noexcept : kernel{} {}
};

/// Every node of one key's template in the signature's order, read once (move-only: the kernels'
/// kernelParams point into its own vectors).
struct key_params {
  std::vector<node_params> nodes;
  std::vector<unsigned char> bytes; ///< every kernel's parameter block, one after another
  std::vector<void*> arguments;     ///< every kernel's kernelParams, pointing into `bytes`
  bool patchable = false; ///< false: a node of a kind set-params cannot set (host, event, ...)
  /// The nodes where it differs from the base key `base` names (ascending)
  std::vector<std::uint32_t> differs;
  std::uint64_t base = 0; ///< the base's id (0: none; a switch compares every node)

  key_params() = default;
  key_params(key_params&&) noexcept = default;
  key_params& operator=(key_params&&) noexcept = default;
  key_params(const key_params&) = delete;
  key_params& operator=(const key_params&) = delete;
  ~key_params() = default;
};

/// The driver's failures as cuda_error (its codes are the runtime's numbers).
template <class = void>
void patch_driver_check(CUresult status, const char* call) {
  if (status != CUDA_SUCCESS) [[unlikely]] {
    throw_error(static_cast<cudaError_t>(status), call);
  }
}

/// Appends a kernel node's parameters (laid out by cuFuncGetParamInfo) to `into`; `slots`:
/// scratch for the layout.
template <class = void>
void read_kernel_node(cudaGraphNode_t node, key_params& into, node_params& params,
                      std::vector<parameter_slot>& slots) {
  constexpr const char* needs = "graph_family's patch switch";
  const driver_api& api = driver();
  patch_driver_check(api.graph_kernel_node_get_params.require(needs)(node, &params.kernel),
                     "cuGraphKernelNodeGetParams");
  CUfunction function = params.kernel.func;
  if (function == nullptr && params.kernel.kern != nullptr) {
    patch_driver_check(api.kernel_get_function.require(needs)(&function, params.kernel.kern),
                       "cuKernelGetFunction");
  }
  slots.clear();
  patch_driver_check(read_parameter_layout(api.func_get_param_info.require(needs), function, slots),
                     "cuFuncGetParamInfo");
  const std::size_t end = parameter_block_bytes(slots);
  params.first_byte = into.bytes.size();
  params.byte_count = end;
  into.bytes.resize(into.bytes.size() + end);
  copy_parameters(params.kernel.kernelParams, params.kernel.extra, slots,
                  into.bytes.data() + params.first_byte);
  // kernelParams are set once every block is in place (below): `bytes` may still grow. Until
  // then the arguments hold each parameter's offset in `bytes`.
  params.kernel.kernelParams = nullptr;
  params.kernel.extra = nullptr; // set one by one, from the key's own copy
  for (const parameter_slot& slot : slots) {
    into.arguments.push_back(reinterpret_cast<void*>(params.first_byte + slot.offset)); // NOLINT
  }
}

/// The parameters of every node of `nodes` (a template's, in the signature's order). A node of
/// another kind than kernel, memcpy, memset, event record or wait, or empty leaves the key not
/// patchable (its switches are updates). Throws cuda_error for a failed read.
template <class = void>
key_params read_key_params(const std::vector<cudaGraphNode_t>& nodes) {
  key_params key;
  key.nodes.resize(nodes.size());
  key.patchable = true;
  std::vector<std::size_t> first_argument(nodes.size(), 0);
  std::vector<parameter_slot> slots;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    node_params& params = key.nodes[i];
    switch (node_type_of(nodes[i])) {
    case cudaGraphNodeTypeKernel:
      params.kind = patch_kind::kernel;
      first_argument[i] = key.arguments.size();
      read_kernel_node(nodes[i], key, params, slots);
      break;
    case cudaGraphNodeTypeMemcpy:
      params.kind = patch_kind::memcpy;
      params.copy = cudaMemcpy3DParms{}; // the union's member from here on
      check(cudaGraphMemcpyNodeGetParams(nodes[i], &params.copy), "cudaGraphMemcpyNodeGetParams");
      break;
    case cudaGraphNodeTypeMemset:
      params.kind = patch_kind::memset;
      params.set = cudaMemsetParams{};
      check(cudaGraphMemsetNodeGetParams(nodes[i], &params.set), "cudaGraphMemsetNodeGetParams");
      break;
    case cudaGraphNodeTypeEventRecord:
      params.kind = patch_kind::event_record;
      params.event = nullptr;
      check(cudaGraphEventRecordNodeGetEvent(nodes[i], &params.event),
            "cudaGraphEventRecordNodeGetEvent");
      break;
    case cudaGraphNodeTypeWaitEvent:
      params.kind = patch_kind::event_wait;
      params.event = nullptr;
      check(cudaGraphEventWaitNodeGetEvent(nodes[i], &params.event),
            "cudaGraphEventWaitNodeGetEvent");
      break;
    case cudaGraphNodeTypeEmpty:
      break;
    default:
      key.patchable = false;
      break;
    }
  }
  for (void*& argument : key.arguments) { // the offsets become pointers: `bytes` is complete
    argument = key.bytes.data() + reinterpret_cast<std::uintptr_t>(argument);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (key.nodes[i].kind == patch_kind::kernel) {
      key.nodes[i].kernel.kernelParams = key.arguments.data() + first_argument[i];
    }
  }
  return key;
}

template <class = void>
bool same_pos(const cudaPos& a, const cudaPos& b) noexcept {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}
template <class = void>
bool same_pitched(const cudaPitchedPtr& a, const cudaPitchedPtr& b) noexcept {
  return a.ptr == b.ptr && a.pitch == b.pitch && a.xsize == b.xsize && a.ysize == b.ysize;
}
/// Field by field (the structs have padding).
template <class = void>
bool same_copy(const cudaMemcpy3DParms& a, const cudaMemcpy3DParms& b) noexcept {
  return same_pitched(a.srcPtr, b.srcPtr) && same_pitched(a.dstPtr, b.dstPtr) &&
         a.extent.width == b.extent.width && a.extent.height == b.extent.height &&
         a.extent.depth == b.extent.depth && a.kind == b.kind && same_pos(a.srcPos, b.srcPos) &&
         same_pos(a.dstPos, b.dstPos) && a.srcArray == b.srcArray && a.dstArray == b.dstArray;
}
template <class = void>
bool same_set(const cudaMemsetParams& a, const cudaMemsetParams& b) noexcept {
  return a.dst == b.dst && a.value == b.value && a.width == b.width && a.height == b.height &&
         a.elementSize == b.elementSize && a.pitch == b.pitch;
}
/// The kernel's shape, function and argument bytes.
template <class = void>
bool same_kernel(const node_params& a, const unsigned char* a_bytes, const node_params& b,
                 const unsigned char* b_bytes) noexcept {
  const CUDA_KERNEL_NODE_PARAMS_v2& x = a.kernel;
  const CUDA_KERNEL_NODE_PARAMS_v2& y = b.kernel;
  return x.gridDimX == y.gridDimX && x.gridDimY == y.gridDimY && x.gridDimZ == y.gridDimZ &&
         x.blockDimX == y.blockDimX && x.blockDimY == y.blockDimY && x.blockDimZ == y.blockDimZ &&
         x.sharedMemBytes == y.sharedMemBytes && x.func == y.func && x.kern == y.kern &&
         x.ctx == y.ctx && a.byte_count == b.byte_count &&
         std::memcmp(a_bytes + a.first_byte, b_bytes + b.first_byte, a.byte_count) == 0;
}

/// Whether node `a` of one key and node `b` of another have the same parameters.
template <class = void>
bool same_node(const node_params& a, const unsigned char* a_bytes, const node_params& b,
               const unsigned char* b_bytes) noexcept {
  if (a.kind != b.kind) {
    return false;
  }
  switch (a.kind) {
  case patch_kind::kernel:
    return same_kernel(a, a_bytes, b, b_bytes);
  case patch_kind::memcpy:
    return same_copy(a.copy, b.copy);
  case patch_kind::memset:
    return same_set(a.set, b.set);
  case patch_kind::event_record:
  case patch_kind::event_wait:
    return a.event == b.event;
  case patch_kind::empty:
    return true;
  }
  return false;
}

/// Lists the nodes where `key` differs from `base`, the key whose id is `base_id` (a key of
/// another node count, or one that cannot be patched, gets none and compares every node).
template <class = void>
void note_differences(key_params& key, const key_params& base, std::uint64_t base_id) {
  key.differs.clear();
  key.base = 0;
  if (!key.patchable || !base.patchable || key.nodes.size() != base.nodes.size()) {
    return;
  }
  for (std::size_t i = 0; i < key.nodes.size(); ++i) {
    if (!same_node(key.nodes[i], key.bytes.data(), base.nodes[i], base.bytes.data())) {
      key.differs.push_back(static_cast<std::uint32_t>(i));
    }
  }
  key.base = base_id;
}

/// What a patch did: how many nodes it set, or that it could not (then nothing is known of the
/// executable's nodes but that an update from the target's template makes them right).
struct patch_outcome {
  bool patched = false;
  std::size_t nodes_set = 0;
};

/// Makes `exec`, which holds `held`'s parameters, hold `target`'s: sets each node whose
/// parameters differ, through `nodes` (the handles of the template `exec` was instantiated
/// from). Not patched: a change set-params cannot express, or a set CUDA refused (its error is
/// cleared); some nodes may be set already, and the caller updates the executable.
template <class = void>
patch_outcome patch_nodes(cudaGraphExec_t exec, const std::vector<cudaGraphNode_t>& nodes,
                          const key_params& held, const key_params& target) {
  patch_outcome outcome;
  const std::size_t count = target.nodes.size();
  if (!held.patchable || !target.patchable || held.nodes.size() != count || nodes.size() != count) {
    return outcome;
  }
  const unsigned char* held_bytes = held.bytes.data();
  const unsigned char* target_bytes = target.bytes.data();
  const auto set_kernel = driver().graph_exec_kernel_node_set_params.find();
  // Node i: false where the switch cannot set it (the caller updates), else set if it differs.
  const auto patch_one = [&](std::size_t i) {
    const node_params& was = held.nodes[i];
    const node_params& now = target.nodes[i];
    if (now.kind != was.kind) {
      return false;
    }
    cudaError_t status = cudaSuccess;
    switch (now.kind) {
    case patch_kind::kernel:
      if (same_kernel(now, target_bytes, was, held_bytes)) {
        return true;
      }
      if (set_kernel == nullptr || now.kernel.ctx != was.kernel.ctx) {
        return false; // another context: set-params refuse it
      }
      status = static_cast<cudaError_t>(set_kernel(exec, nodes[i], &now.kernel));
      break;
    case patch_kind::memcpy:
      if (same_copy(now.copy, was.copy)) {
        return true;
      }
      if (now.copy.extent.height != 1 || now.copy.extent.depth != 1 ||
          was.copy.extent.height != 1 || was.copy.extent.depth != 1 ||
          now.copy.kind != was.copy.kind || now.copy.srcArray != nullptr ||
          now.copy.dstArray != nullptr) {
        return false; // CUDA sets 1-D copies of one kind only
      }
      status = cudaGraphExecMemcpyNodeSetParams(exec, nodes[i], &now.copy);
      break;
    case patch_kind::memset:
      if (same_set(now.set, was.set)) {
        return true;
      }
      if (now.set.height != 1 || was.set.height != 1) {
        return false; // CUDA sets 1-D memsets only
      }
      status = cudaGraphExecMemsetNodeSetParams(exec, nodes[i], &now.set);
      break;
    case patch_kind::event_record:
    case patch_kind::event_wait:
      if (now.event == was.event) {
        return true;
      }
      status = now.kind == patch_kind::event_record
                   ? cudaGraphExecEventRecordNodeSetEvent(exec, nodes[i], now.event)
                   : cudaGraphExecEventWaitNodeSetEvent(exec, nodes[i], now.event);
      break;
    case patch_kind::empty:
      return true;
    }
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError()); // graphcap's own refused set: the update follows
      return false;
    }
    ++outcome.nodes_set;
    return true;
  };
  if (held.base != 0 && held.base == target.base) { // only where either differs from the base
    const std::vector<std::uint32_t>& a = held.differs;
    const std::vector<std::uint32_t>& b = target.differs;
    std::size_t x = 0;
    std::size_t y = 0;
    while (x < a.size() || y < b.size()) {
      const std::uint32_t i = y == b.size() || (x < a.size() && a[x] < b[y]) ? a[x] : b[y];
      x += x < a.size() && a[x] == i ? 1 : 0;
      y += y < b.size() && b[y] == i ? 1 : 0;
      if (!patch_one(i)) {
        return outcome;
      }
    }
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      if (!patch_one(i)) {
        return outcome;
      }
    }
  }
  outcome.patched = true;
  return outcome;
}

} // namespace graphcap::detail::families
