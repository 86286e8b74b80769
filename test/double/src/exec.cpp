// Executable graphs: instantiation, launch (nodes run on the host in a
// topological order), update and DOT output.
#include "state.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

using namespace cuda_double::detail;

namespace cuda_double::detail {

bool topological_order(const CUgraph_st& graph, std::vector<CUgraphNode_st*>& order) {
  // Kahn's algorithm; ties broken by creation order for determinism.
  std::map<const CUgraphNode_st*, std::size_t> position, pending;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i)
    position[graph.nodes[i].get()] = i;
  std::map<const CUgraphNode_st*, std::vector<std::size_t>> dependents;
  std::set<std::size_t> ready;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const CUgraphNode_st* n = graph.nodes[i].get();
    pending[n] = n->deps.size();
    for (const Edge& e : n->deps)
      dependents[e.from].push_back(i);
    if (n->deps.empty())
      ready.insert(i);
  }
  order.clear();
  while (!ready.empty()) {
    CUgraphNode_st* n = graph.nodes[*ready.begin()].get();
    ready.erase(ready.begin());
    order.push_back(n);
    for (std::size_t d : dependents[n]) {
      if (--pending[graph.nodes[d].get()] == 0)
        ready.insert(d);
    }
  }
  return order.size() == graph.nodes.size(); // false: the graph has a cycle
}

cudaError_t run_graph(const std::vector<CUgraphNode_st*>& order) {
  for (CUgraphNode_st* n : order) {
    if (n->disabled)
      continue; // cudaGraphNodeSetEnabled(..., 0): the node does nothing
    switch (n->type) {
    case cudaGraphNodeTypeHost:
      run_host_function(n->host.fn, n->host.userData);
      break;
    case cudaGraphNodeTypeMemset:
      // On a GPU this would be an asynchronous illegal address error.
      if (!device_range(n->memset.dst, memset_extent(n->memset), false))
        return cudaErrorIllegalAddress;
      do_memset(n->memset);
      break;
    case cudaGraphNodeTypeMemcpy: {
      const cudaMemcpy3DParms& p = n->memcpy;
      const std::size_t bytes = p.extent.width * p.extent.height * p.extent.depth;
      if (p.extent.height == 1 && p.extent.depth == 1 &&
          check_memcpy(static_cast<char*>(p.dstPtr.ptr) + p.dstPos.x,
                       static_cast<const char*>(p.srcPtr.ptr) + p.srcPos.x, bytes, p.kind, false)) {
        return cudaErrorIllegalAddress;
      }
      do_memcpy3d(p);
      break;
    }
    case cudaGraphNodeTypeEventRecord:
      if (state().events.count(n->event))
        record_event_now(n->event);
      break;
    case cudaGraphNodeTypeMemAlloc:
      if (Allocation* a = find_allocation(n->alloc.dptr))
        map_graph_allocation(*a);
      break;
    case cudaGraphNodeTypeMemFree: {
      Allocation* a = find_allocation(n->free_ptr);
      if (!a || !a->mapped)
        return cudaErrorIllegalAddress; // freed twice
      unmap_graph_allocation(*a);
      break;
    }
    case cudaGraphNodeTypeConditional:
      if (cudaError_t e = run_conditional(*n))
        return e;
      break;
    case cudaGraphNodeTypeKernel:
      if (cudaError_t e = run_kernel(*n->kernel))
        return e;
      break;
    case cudaGraphNodeTypeGraph: {
      std::vector<CUgraphNode_st*> child_order;
      topological_order(*n->child, child_order);
      if (cudaError_t e = run_graph(child_order))
        return e;
      break;
    }
    default:
      break; // empty and wait nodes: nothing to do on the host
    }
  }
  return cudaSuccess;
}

bool is_live_exec(cudaGraphExec_t exec) {
  return exec && state().execs.count(exec);
}

CUgraphNode_st* exec_counterpart(CUgraphExec_st& exec, const CUgraphNode_st& node) {
  const CUgraph_st* graph = node.graph;
  if (!graph)
    return nullptr;
  CUgraph_st* copy = nullptr;
  if (graph->owner) { // a conditional body: the same body of the executable's copy of its node
    const CUgraphNode_st* owner = graph->owner;
    CUgraphNode_st* owner_copy = exec_counterpart(exec, *owner);
    if (!owner_copy || !owner->cond || !owner_copy->cond)
      return nullptr;
    for (std::size_t b = 0; b < owner->cond->bodies.size(); ++b) {
      if (owner->cond->bodies[b].get() == graph && b < owner_copy->cond->bodies.size())
        copy = owner_copy->cond->bodies[b].get();
    }
  } else if (exec.graph->cloned_from_id == graph->id) {
    copy = exec.graph.get();
  }
  if (!copy)
    return nullptr;
  for (auto& n : copy->nodes) {
    if (n->index == node.index)
      return n.get();
  }
  return nullptr;
}

void destroy_exec(cudaGraphExec_t exec) {
  if (exec->alloc_slot)
    --*exec->alloc_slot;
  state().exec_caches[exec->cache_device].used -= exec->cache_bytes; // the pieces stay
  release_graph_contents(*exec->graph);
  state().execs.erase(exec);
  delete exec;
}

} // namespace cuda_double::detail

namespace {

constexpr unsigned long long kInstantiateFlags =
    cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
    cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority;

bool live_exec(cudaGraphExec_t e) {
  return is_live_exec(e);
}

// An executable's bytes of its device's cache (per node: kernels, and every node but memsets and
// empty nodes), the cache grown in 2 MiB pieces while device memory lasts.
cudaError_t take_exec_cache(CUgraphExec_st& exec) {
  constexpr std::size_t piece = std::size_t{2} << 20;
  State& st = state();
  std::size_t bytes = 0;
  for (const auto& node : exec.graph->nodes) {
    if (node->type == cudaGraphNodeTypeKernel)
      bytes += st.exec_bytes_per_kernel_node;
    else if (node->type != cudaGraphNodeTypeMemset && node->type != cudaGraphNodeTypeEmpty)
      bytes += st.exec_bytes_per_other_node;
  }
  exec.cache_device = thread_state().device;
  State::ExecCache& cache = st.exec_caches[exec.cache_device];
  const std::size_t need = (cache.used + bytes + piece - 1) / piece * piece;
  if (need > cache.reserved) {
    if (device_bytes_in_use() + (need - cache.reserved) > st.total_memory)
      return cudaErrorMemoryAllocation;
    cache.reserved = need;
  }
  cache.used += bytes;
  exec.cache_bytes = bytes;
  return cudaSuccess;
}

cudaError_t instantiate(cudaGraphExec_t* out, cudaGraph_t graph, unsigned long long flags,
                        cudaGraphInstantiateResult* result = nullptr,
                        cudaGraphNode_t* err_node = nullptr) {
  if (cudaError_t e = check_unsafe_call())
    return e;
  if (!out || !graph || !state().graphs.count(graph))
    return cudaErrorInvalidValue;
  if (flags & ~kInstantiateFlags)
    return cudaErrorInvalidValue;
  cudaGraphInstantiateResult r = cudaGraphInstantiateSuccess;
  cudaGraphNode_t bad = nullptr;
  if (cudaError_t e = check_conditionals(*graph, r, bad)) {
    if (result)
      *result = r;
    if (err_node)
      *err_node = bad;
    return e;
  }
  // The addresses of graph allocations are fixed per graph, and CUDA documents the same limit
  // for graphs with conditional nodes: only one executable may exist at a time.
  const bool single = has_memory_nodes(*graph, true) || has_conditional_nodes(*graph);
  if (single && *graph->alloc_execs > 0)
    return cudaErrorNotSupported;
  auto exec = std::make_unique<CUgraphExec_st>();
  exec->graph.reset(clone_graph(*graph, false));
  if (!topological_order(*exec->graph, exec->order)) {
    release_graph_contents(*exec->graph);
    return cudaErrorInvalidValue;
  }
  if (cudaError_t e = take_exec_cache(*exec)) {
    release_graph_contents(*exec->graph);
    return e;
  }
  exec->id = state().next_exec_id++;
  exec->flags = flags;
  if (single) {
    exec->alloc_slot = graph->alloc_execs;
    ++*exec->alloc_slot;
  }
  *out = exec.release();
  state().execs.insert(*out);
  return cudaSuccess;
}

// The device an operand was allocated on; -1 for host memory (pinned or pageable).
int device_of(const void* p) {
  const Allocation* a = find_allocation(p);
  return a && a->kind != Allocation::Kind::pinned ? a->device : -1;
}

// A kernel launch's attribute `id`, zero where none was given.
cudaLaunchAttributeValue attribute_of(const KernelCall& call, cudaLaunchAttributeID id) {
  cudaLaunchAttributeValue value{};
  for (const cudaLaunchAttribute& a : call.attributes) {
    if (a.id == id)
      value = a.val;
  }
  return value;
}

// Two device operands on different devices (host memory has none: -1).
bool device_changed(const void* before, const void* after) {
  const int was = device_of(before);
  const int now = device_of(after);
  return was >= 0 && now >= 0 && was != now;
}

// Stream-ordered pool memory (cudaMallocAsync) against any other.
bool pool_changed(const void* before, const void* after) {
  const Allocation* was = find_allocation(before);
  const Allocation* now = find_allocation(after);
  return (was && was->pool) != (now && now->pool);
}

// Pairs nodes by creation order and checks what cudaGraphExecUpdate may
// change; applies the new parameters when `apply` is set.
cudaGraphExecUpdateResult compare(CUgraph_st& old, const CUgraph_st& neu, bool apply,
                                  cudaGraphNode_t& err_node, cudaGraphNode_t& err_from) {
  if (old.nodes.size() != neu.nodes.size())
    return cudaGraphExecUpdateErrorTopologyChanged;
  std::map<const CUgraphNode_st*, std::size_t> pos_old, pos_new;
  for (std::size_t i = 0; i < old.nodes.size(); ++i) {
    pos_old[old.nodes[i].get()] = i;
    pos_new[neu.nodes[i].get()] = i;
  }
  for (std::size_t i = 0; i < neu.nodes.size(); ++i) {
    CUgraphNode_st& o = *old.nodes[i];
    CUgraphNode_st& n = *neu.nodes[i];
    err_node = &n;
    if (o.type != n.type)
      return cudaGraphExecUpdateErrorNodeTypeChanged;
    std::multiset<std::size_t> deps_old, deps_new;
    for (const Edge& e : o.deps)
      deps_old.insert(pos_old[e.from]);
    for (const Edge& e : n.deps)
      deps_new.insert(pos_new[e.from]);
    if (deps_old != deps_new) {
      if (!n.deps.empty())
        err_from = n.deps.front().from;
      return cudaGraphExecUpdateErrorTopologyChanged;
    }
    switch (n.type) {
    case cudaGraphNodeTypeMemset:
      // Documented, not checked on the H200 (one device): the operand's device may not change.
      if (device_of(o.memset.dst) != device_of(n.memset.dst))
        return cudaGraphExecUpdateErrorParametersChanged;
      // Only 1D memsets may change, and never their height (the H200 agrees).
      if (o.memset.height != n.memset.height)
        return cudaGraphExecUpdateErrorParametersChanged;
      if (o.memset.height > 1 &&
          (o.memset.width != n.memset.width || o.memset.pitch != n.memset.pitch ||
           o.memset.elementSize != n.memset.elementSize)) {
        return cudaGraphExecUpdateErrorParametersChanged;
      }
      break;
    case cudaGraphNodeTypeMemcpy: {
      // The memory type of either operand may not change.
      auto kind_of = [](const void* p) {
        const Allocation* a = find_allocation(p);
        return a ? static_cast<int>(a->kind == Allocation::Kind::pinned) : 2;
      };
      if (kind_of(o.memcpy.srcPtr.ptr) != kind_of(n.memcpy.srcPtr.ptr) ||
          kind_of(o.memcpy.dstPtr.ptr) != kind_of(n.memcpy.dstPtr.ptr)) {
        return cudaGraphExecUpdateErrorParametersChanged;
      }
      // Nor their devices (documented, not checked on the H200: it has one device).
      if (device_of(o.memcpy.srcPtr.ptr) != device_of(n.memcpy.srcPtr.ptr) ||
          device_of(o.memcpy.dstPtr.ptr) != device_of(n.memcpy.dstPtr.ptr)) {
        return cudaGraphExecUpdateErrorParametersChanged;
      }
      break;
    }
    case cudaGraphNodeTypeKernel:
      // The H200 refuses a change of cooperative launch (AttributesChanged) and takes every
      // other launch attribute change as a success, keeping the executable's own (a cluster shape
      // stays as instantiated: benchmark/probes/exec_update_attributes.cu).
      if (o.kernel && n.kernel &&
          attribute_of(*o.kernel, cudaLaunchAttributeCooperative).cooperative !=
              attribute_of(*n.kernel, cudaLaunchAttributeCooperative).cooperative) {
        return cudaGraphExecUpdateErrorAttributesChanged;
      }
      break;
    case cudaGraphNodeTypeMemAlloc:
      if (o.alloc.dptr != n.alloc.dptr || o.alloc.bytesize != n.alloc.bytesize) {
        return cudaGraphExecUpdateErrorNotSupported;
      }
      break;
    case cudaGraphNodeTypeMemFree:
      if (o.free_ptr != n.free_ptr)
        return cudaGraphExecUpdateErrorNotSupported;
      break;
    case cudaGraphNodeTypeGraph: {
      const cudaGraphExecUpdateResult r = compare(*o.child, *n.child, apply, err_node, err_from);
      if (r != cudaGraphExecUpdateSuccess)
        return r;
      err_node = &n;
      break;
    }
    case cudaGraphNodeTypeConditional: {
      // The node's own parameters may not change (the H200 answers NotSupported, naming the
      // node), but its bodies update like child graphs.
      if (o.cond->type != n.cond->type || o.cond->bodies.size() != n.cond->bodies.size())
        return cudaGraphExecUpdateErrorNotSupported;
      err_node = nullptr; // a body of another node count: no node named, as on the H200
      for (std::size_t b = 0; b < n.cond->bodies.size(); ++b) {
        const cudaGraphExecUpdateResult r =
            compare(*o.cond->bodies[b], *n.cond->bodies[b], apply, err_node, err_from);
        if (r != cudaGraphExecUpdateSuccess)
          return r;
      }
      err_node = &n;
      // The new graph's handle (its default and flags) drives the node from now on.
      if (apply) {
        o.cond->handle = n.cond->handle;
        o.cond->key = n.cond->key;
      }
      break;
    }
    default:
      break;
    }
    if (apply) {
      o.host = n.host;
      o.memset = n.memset;
      o.memcpy = n.memcpy;
      o.event = n.event;
      // New arguments and shape, or another function: CUDA 13 documents both as updatable
      // (FunctionChanged only for drivers before 11.2; the double has one device, no CDP).
      if (n.kernel) {
        std::vector<cudaLaunchAttribute> kept =
            o.kernel ? o.kernel->attributes : std::vector<cudaLaunchAttribute>{};
        o.kernel = std::make_unique<KernelCall>(*n.kernel);
        o.kernel->attributes = std::move(kept); // the launch attributes stay the executable's
      }
    }
  }
  if (apply) {
    CUgraph_st listed; // the new graph's handles, held before the old ones are let go
    listed.handles = neu.handles;
    retain_handles(listed);
    release_handles(old);
    old.handles = std::move(listed.handles);
  }
  err_node = nullptr;
  err_from = nullptr;
  return cudaGraphExecUpdateSuccess;
}

const char* type_name(cudaGraphNodeType t) {
  switch (t) {
  case cudaGraphNodeTypeKernel:
    return "KERNEL";
  case cudaGraphNodeTypeMemcpy:
    return "MEMCPY";
  case cudaGraphNodeTypeMemset:
    return "MEMSET";
  case cudaGraphNodeTypeHost:
    return "HOST";
  case cudaGraphNodeTypeGraph:
    return "CHILD_GRAPH";
  case cudaGraphNodeTypeEmpty:
    return "EMPTY";
  case cudaGraphNodeTypeWaitEvent:
    return "WAIT_EVENT";
  case cudaGraphNodeTypeEventRecord:
    return "EVENT_RECORD";
  case cudaGraphNodeTypeMemAlloc:
    return "MEM_ALLOC";
  case cudaGraphNodeTypeMemFree:
    return "MEM_FREE";
  case cudaGraphNodeTypeConditional:
    return "CONDITIONAL";
  default:
    return "OTHER";
  }
}

void print_dot(std::FILE* f, const CUgraph_st& g, const std::string& prefix) {
  for (const auto& n : g.nodes) {
    std::fprintf(f, "  \"%sn%u\" [label=\"%s %u\"", prefix.c_str(), n->index, type_name(n->type),
                 n->index);
    if (n->type == cudaGraphNodeTypeMemset) {
      std::fprintf(f, " tooltip=\"dst=%p value=%u width=%zu\"", n->memset.dst, n->memset.value,
                   n->memset.width);
    } else if (n->type == cudaGraphNodeTypeMemcpy) {
      std::fprintf(f, " tooltip=\"dst=%p src=%p bytes=%zu\"", n->memcpy.dstPtr.ptr,
                   n->memcpy.srcPtr.ptr,
                   n->memcpy.extent.width * n->memcpy.extent.height * n->memcpy.extent.depth);
    } else if (n->type == cudaGraphNodeTypeMemAlloc) {
      std::fprintf(f, " tooltip=\"dptr=%p bytes=%zu\"", n->alloc.dptr, n->alloc.bytesize);
    } else if (n->cond) {
      static const char* const kinds[] = {"if", "while", "switch"};
      std::fprintf(f, " tooltip=\"%s handle=%llu bodies=%zu\"", kinds[n->cond->type % 3],
                   n->cond->handle, n->cond->bodies.size());
    }
    std::fprintf(f, "];\n");
    for (const Edge& e : n->deps) {
      std::fprintf(f, "  \"%sn%u\" -> \"%sn%u\";\n", prefix.c_str(), e.from->index, prefix.c_str(),
                   n->index);
    }
    if (n->child)
      print_dot(f, *n->child, prefix + "n" + std::to_string(n->index) + "_");
    for (std::size_t b = 0; n->cond && b < n->cond->bodies.size(); ++b) {
      print_dot(f, *n->cond->bodies[b],
                prefix + "n" + std::to_string(n->index) + "_b" + std::to_string(b) + "_");
    }
  }
}

} // namespace

extern "C" {

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags) {
  return api(__func__, [&] { return instantiate(pGraphExec, graph, flags); });
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return api(__func__, [&] {
    // Uploading needs a stream, which only cudaGraphInstantiateWithParams takes.
    if (flags & cudaGraphInstantiateFlagUpload)
      return cudaErrorInvalidValue;
    return instantiate(pGraphExec, graph, flags);
  });
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams* instantiateParams) {
  return api(__func__, [&] {
    if (!instantiateParams)
      return cudaErrorInvalidValue;
    cudaGraphInstantiateResult result = cudaGraphInstantiateError;
    cudaGraphNode_t err_node = nullptr;
    const cudaError_t e =
        instantiate(pGraphExec, graph, instantiateParams->flags, &result, &err_node);
    instantiateParams->errNode_out = e == cudaSuccess ? nullptr : err_node;
    instantiateParams->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess : result;
    return e;
  });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  return api(__func__, [&] {
    if (cudaError_t e = check_unsafe_call())
      return e;
    if (!live_exec(graphExec))
      return cudaErrorInvalidValue;
    destroy_exec(graphExec);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long* flags) {
  return api(__func__, [&] {
    if (!live_exec(graphExec) || !flags)
      return cudaErrorInvalidValue;
    *flags = graphExec->flags;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return api(__func__, [&] {
    if (!live_exec(graphExec))
      return cudaErrorInvalidValue;
    Target t;
    if (cudaError_t e = begin_stream_op(stream, t))
      return e;
    if (t.capture) {
      // Launching into a capture embeds the graph as a child node, which may hold neither
      // memory nor conditional nodes (the latter refused as on the H200).
      if (has_memory_nodes(*graphExec->graph, false)) {
        invalidate(t.capture);
        return cudaErrorNotSupported;
      }
      if (has_conditional_nodes(*graphExec->graph)) {
        invalidate(t.capture);
        return cudaErrorStreamCaptureUnsupported;
      }
      capture_node(t, cudaGraphNodeTypeGraph)->child.reset(clone_graph(*graphExec->graph, false));
      return cudaSuccess;
    }
    for (CUgraphNode_st* n : graphExec->order) {
      if (n->type != cudaGraphNodeTypeMemAlloc)
        continue;
      Allocation* a = find_allocation(n->alloc.dptr);
      if (!a || !a->mapped)
        continue;
      // An allocation of the previous launch is still live.
      if (!(graphExec->flags & cudaGraphInstantiateFlagAutoFreeOnLaunch))
        return cudaErrorInvalidValue;
      unmap_graph_allocation(*a);
    }
    apply_condition_defaults(*graphExec->graph);
    return run_graph(graphExec->order);
  });
}

cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return api(__func__, [&] {
    if (!live_exec(graphExec))
      return cudaErrorInvalidValue;
    Target t;
    if (cudaError_t e = begin_stream_op(stream, t))
      return e;
    if (t.capture) {
      invalidate(t.capture);
      return cudaErrorStreamCaptureUnsupported;
    }
    return cudaSuccess; // nothing to upload to
  });
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo* resultInfo) {
  return api(__func__, [&] {
    if (!live_exec(hGraphExec) || !hGraph || !state().graphs.count(hGraph) || !resultInfo) {
      return cudaErrorInvalidValue;
    }
    cudaGraphNode_t err_node = nullptr, err_from = nullptr;
    cudaGraphExecUpdateResult r = compare(*hGraphExec->graph, *hGraph, false, err_node, err_from);
    resultInfo->result = r;
    resultInfo->errorNode = r == cudaGraphExecUpdateSuccess ? nullptr : err_node;
    resultInfo->errorFromNode = r == cudaGraphExecUpdateSuccess ? nullptr : err_from;
    if (r != cudaGraphExecUpdateSuccess)
      return cudaErrorGraphExecUpdateFailure;
    compare(*hGraphExec->graph, *hGraph, true, err_node, err_from);
    return cudaSuccess;
  });
}

// Kernel, memset and memcpy nodes only (the H200 refuses a conditional node:
// benchmark/probes/rebind_limits.cu), body nodes included.
cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int isEnabled) {
  return api(__func__, [&] {
    if (!live_exec(hGraphExec) || !state().nodes.count(hNode))
      return cudaErrorInvalidValue;
    CUgraphNode_st* copy = exec_counterpart(*hGraphExec, *hNode);
    if (!copy || (copy->type != cudaGraphNodeTypeKernel && copy->type != cudaGraphNodeTypeMemset &&
                  copy->type != cudaGraphNodeTypeMemcpy)) {
      return cudaErrorInvalidValue;
    }
    copy->disabled = isEnabled == 0;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int* isEnabled) {
  return api(__func__, [&] {
    if (!live_exec(hGraphExec) || !state().nodes.count(hNode) || !isEnabled)
      return cudaErrorInvalidValue;
    CUgraphNode_st* copy = exec_counterpart(*hGraphExec, *hNode);
    if (!copy || (copy->type != cudaGraphNodeTypeKernel && copy->type != cudaGraphNodeTypeMemset &&
                  copy->type != cudaGraphNodeTypeMemcpy)) {
      return cudaErrorInvalidValue;
    }
    *isEnabled = copy->disabled ? 0 : 1;
    return cudaSuccess;
  });
}

// CUDA's rules for patching a memset or memcpy node of an executable (cudaGraphExec*SetParams),
// as the H200 showed them (benchmark/probes/setparams_refusals.cu, stored at
// docs/results/2026-12-04-h200-session17/probes/setparams_refusals{,-rerun}.log). A memset: 1-D
// before and after, its destination CUDA memory (device, pinned, managed, pool: all accepted;
// pageable refused); element size and width may change. A memcpy: 1-D, the kind unchanged, each
// operand the kind names device memory CUDA memory (pinned included; pageable refused), any operand
// of a cudaMemcpyDefault copy accepted (the H200 then faults at the launch on pageable memory), an
// operand never moved between cudaMalloc memory and stream-ordered pool memory. Documented, not
// probed (one device): an operand on another device is refused.
cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const cudaMemsetParams* pNodeParams) {
  return api(__func__, [&] {
    if (!live_exec(hGraphExec) || !state().nodes.count(node) || !pNodeParams ||
        node->type != cudaGraphNodeTypeMemset) {
      return cudaErrorInvalidValue;
    }
    CUgraphNode_st* copy = exec_counterpart(*hGraphExec, *node);
    if (!copy)
      return cudaErrorInvalidValue;
    const cudaMemsetParams& p = *pNodeParams;
    if (p.height != 1 || copy->memset.height != 1 || p.width == 0)
      return cudaErrorInvalidValue;
    if (cudaError_t e = check_memset(p, true))
      return e;
    if (device_changed(copy->memset.dst, p.dst))
      return cudaErrorInvalidValue;
    copy->memset = p;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const cudaMemcpy3DParms* pNodeParams) {
  return api(__func__, [&] {
    if (!live_exec(hGraphExec) || !state().nodes.count(node) || !pNodeParams ||
        node->type != cudaGraphNodeTypeMemcpy) {
      return cudaErrorInvalidValue;
    }
    CUgraphNode_st* copy = exec_counterpart(*hGraphExec, *node);
    if (!copy)
      return cudaErrorInvalidValue;
    const cudaMemcpy3DParms& p = *pNodeParams;
    if (cudaError_t e = check_memcpy3d(&p))
      return e;
    const auto one_dimensional = [](const cudaMemcpy3DParms& q) {
      return q.extent.height == 1 && q.extent.depth == 1;
    };
    if (!one_dimensional(p) || !one_dimensional(copy->memcpy) || p.kind != copy->memcpy.kind)
      return cudaErrorInvalidValue;
    const cudaMemcpy3DParms& was = copy->memcpy;
    void* dst = static_cast<char*>(p.dstPtr.ptr) + p.dstPos.x;
    const void* src = static_cast<const char*>(p.srcPtr.ptr) + p.srcPos.x;
    if (check_memcpy(dst, src, p.extent.width, p.kind, true) != cudaSuccess ||
        pool_changed(was.srcPtr.ptr, p.srcPtr.ptr) || pool_changed(was.dstPtr.ptr, p.dstPtr.ptr) ||
        device_changed(was.srcPtr.ptr, p.srcPtr.ptr) ||
        device_changed(was.dstPtr.ptr, p.dstPtr.ptr)) {
      return cudaErrorInvalidValue;
    }
    copy->memcpy = p;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                           const cudaHostNodeParams* pNodeParams) {
  return api(__func__, [&] {
    if (!live_exec(hGraphExec) || !state().nodes.count(node) || !pNodeParams || !pNodeParams->fn) {
      return cudaErrorInvalidValue;
    }
    for (auto& n : hGraphExec->graph->nodes) {
      if (n->index == node->index && n->type == cudaGraphNodeTypeHost &&
          hGraphExec->graph->cloned_from_id == node->graph->id) {
        n->host = *pNodeParams;
        return cudaSuccess;
      }
    }
    return cudaErrorInvalidValue;
  });
}

// An event record or wait node of an executable made to record or wait for another event.
static cudaError_t set_exec_event(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event,
                                  cudaGraphNodeType type) {
  if (!live_exec(exec) || !state().nodes.count(node) || node->type != type ||
      !state().events.count(event)) {
    return cudaErrorInvalidValue;
  }
  CUgraphNode_st* copy = exec_counterpart(*exec, *node);
  if (!copy || copy->type != type)
    return cudaErrorInvalidValue;
  copy->event = event;
  return cudaSuccess;
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                 cudaEvent_t event) {
  return api(__func__, [&] {
    return set_exec_event(hGraphExec, hNode, event, cudaGraphNodeTypeEventRecord);
  });
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                               cudaEvent_t event) {
  return api(__func__,
             [&] { return set_exec_event(hGraphExec, hNode, event, cudaGraphNodeTypeWaitEvent); });
}

cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int flags) {
  (void)flags; // verbosity: the double always prints the same detail
  return api(__func__, [&] {
    if (!graph || !state().graphs.count(graph) || !path)
      return cudaErrorInvalidValue;
    std::FILE* f = std::fopen(path, "w");
    if (!f)
      return cudaErrorOperatingSystem;
    std::fprintf(f, "digraph graph_%u {\n", graph->id);
    print_dot(f, *graph, "");
    std::fprintf(f, "}\n");
    return std::fclose(f) == 0 ? cudaSuccess : cudaErrorOperatingSystem;
  });
}

} // extern "C"
