// Graphs: construction, queries and cloning.
#include "state.hpp"

#include <algorithm>
#include <cstring>

using namespace cuda_double::detail;

namespace cuda_double::detail {

CUgraph_st* new_graph(bool user_visible) {
  auto* g = new CUgraph_st;
  g->id = state().next_graph_id++;
  g->user_visible = user_visible;
  if (user_visible)
    state().graphs.insert(g);
  return g;
}

void release_node_payload(CUgraphNode_st& node) {
  if (node.type == cudaGraphNodeTypeMemAlloc)
    release_graph_reference(node.alloc.dptr);
  if (node.child) {
    release_graph_contents(*node.child);
    node.child.reset();
  }
  if (node.cond)
    release_conditional(node);
}

void release_graph_contents(CUgraph_st& graph) {
  for (auto& n : graph.nodes) {
    state().nodes.erase(n.get());
    release_node_payload(*n);
  }
  graph.nodes.clear();
  release_handles(graph);
}

void destroy_graph(CUgraph_st* graph) {
  release_graph_contents(*graph);
  state().graphs.erase(graph);
  delete graph;
}

CUgraphNode_st* add_node(CUgraph_st* graph, cudaGraphNodeType type, CUgraphNode_st* const* deps,
                         const cudaGraphEdgeData* edges, std::size_t count) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->graph = graph;
  n->type = type;
  n->index = graph->next_index++;
  for (std::size_t i = 0; i < count; ++i)
    n->deps.push_back(Edge{deps[i], edges ? edges[i] : cudaGraphEdgeData{}});
  CUgraphNode_st* raw = n.get();
  graph->nodes.push_back(std::move(n));
  if (graph->user_visible)
    state().nodes.insert(raw);
  note_node_created(raw);
  return raw;
}

bool is_node_of(const CUgraph_st* graph, const CUgraphNode_st* node) {
  return state().nodes.count(const_cast<CUgraphNode_st*>(node)) && node->graph == graph;
}

bool has_memory_nodes(const CUgraph_st& graph, bool alloc_only) {
  for (const auto& n : graph.nodes) {
    if (n->type == cudaGraphNodeTypeMemAlloc)
      return true;
    if (!alloc_only && n->type == cudaGraphNodeTypeMemFree)
      return true;
    if (n->child && has_memory_nodes(*n->child, alloc_only))
      return true;
  }
  return false;
}

CUgraph_st* clone_graph(const CUgraph_st& source, bool user_visible) {
  CUgraph_st* g = new_graph(user_visible);
  g->cloned_from = &source;
  g->cloned_from_id = source.id;
  g->next_index = source.next_index;
  g->handles = source.handles;
  g->next_handle = source.next_handle;
  retain_handles(*g);
  for (const auto& src : source.nodes) {
    auto n = std::make_unique<CUgraphNode_st>();
    n->graph = g;
    n->type = src->type;
    n->index = src->index;
    n->host = src->host;
    n->memset = src->memset;
    n->memcpy = src->memcpy;
    n->event = src->event;
    n->alloc = src->alloc;
    n->free_ptr = src->free_ptr;
    if (src->kernel)
      n->kernel = std::make_unique<KernelCall>(*src->kernel); // its own copy of the arguments
    if (n->type == cudaGraphNodeTypeMemAlloc) {
      if (Allocation* a = find_allocation(n->alloc.dptr))
        ++a->graph_refs;
    }
    if (src->child)
      n->child.reset(clone_graph(*src->child, false));
    if (src->cond)
      clone_conditional(*src, *n, user_visible);
    g->clone_of[src.get()] = n.get();
    if (user_visible)
      state().nodes.insert(n.get());
    g->nodes.push_back(std::move(n));
  }
  // Edges second: cudaGraphAddDependencies may point backwards in creation order.
  for (std::size_t i = 0; i < source.nodes.size(); ++i) {
    for (const Edge& e : source.nodes[i]->deps)
      g->nodes[i]->deps.push_back(Edge{g->clone_of.at(e.from), e.data});
  }
  return g;
}

} // namespace cuda_double::detail

namespace {

bool live_graph(cudaGraph_t g) {
  return g && live_graph_or_body(g);
}
bool live_node(cudaGraphNode_t n) {
  return n && state().nodes.count(n);
}

// Validates the common arguments of the cudaGraphAdd*Node functions.
cudaError_t check_add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                      std::size_t count) {
  if (!out || !live_graph(graph))
    return cudaErrorInvalidValue;
  if (count && !deps)
    return cudaErrorInvalidValue;
  for (std::size_t i = 0; i < count; ++i) {
    if (!is_node_of(graph, deps[i]))
      return cudaErrorInvalidValue;
    if (std::find(deps, deps + i, deps[i]) != deps + i)
      return cudaErrorInvalidValue; // duplicate
  }
  return cudaSuccess;
}

// Runs `fill` on a new node once the arguments are valid and `check` passed.
template <class Check, class Fill>
cudaError_t add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                std::size_t count, cudaGraphNodeType type, Check&& check, Fill&& fill) {
  if (cudaError_t e = check_add(out, graph, deps, count))
    return e;
  if (cudaError_t e = check())
    return e;
  CUgraphNode_st* n = add_node(graph, type, deps, nullptr, count);
  fill(*n);
  *out = n;
  return cudaSuccess;
}

constexpr auto no_check = [] { return cudaSuccess; };

// Copies up to *count entries into out (if non-null), setting *count to the
// number available when out is null, and to the number written otherwise.
template <class T>
cudaError_t copy_list(const std::vector<T>& items, T* out, std::size_t* count) {
  if (!count)
    return cudaErrorInvalidValue;
  if (!out) {
    *count = items.size();
    return cudaSuccess;
  }
  const std::size_t n = std::min(*count, items.size());
  std::copy(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(n), out);
  for (std::size_t i = n; i < *count; ++i)
    out[i] = T{};
  *count = n;
  return cudaSuccess;
}

cudaError_t copy_edges(const std::vector<cudaGraphNode_t>& nodes,
                       const std::vector<cudaGraphEdgeData>& data, cudaGraphNode_t* out,
                       cudaGraphEdgeData* edge_out, std::size_t* count) {
  if (!count)
    return cudaErrorInvalidValue;
  if (out && !edge_out) {
    for (const cudaGraphEdgeData& d : data) {
      if (!(d == cudaGraphEdgeData{}))
        return cudaErrorLossyQuery;
    }
  }
  const std::size_t requested = *count;
  if (cudaError_t e = copy_list(nodes, out, count))
    return e;
  if (out && edge_out) {
    for (std::size_t i = 0; i < requested; ++i)
      edge_out[i] = i < *count ? data[i] : cudaGraphEdgeData{};
  }
  return cudaSuccess;
}

template <class F>
cudaError_t with_node(cudaGraphNode_t node, cudaGraphNodeType type, F&& f) {
  if (!live_node(node) || node->type != type)
    return cudaErrorInvalidValue;
  return f(*node);
}

// The node getters: *out = the node's `field`, for a live node of `type` and a non-null `out`.
template <class T>
cudaError_t get_field(cudaGraphNode_t node, cudaGraphNodeType type, T CUgraphNode_st::*field,
                      T* out) {
  return with_node(node, type, [&](CUgraphNode_st& n) {
    if (!out)
      return cudaErrorInvalidValue;
    *out = n.*field;
    return cudaSuccess;
  });
}

// The node setters: the node's `field` = *params, for a live node of `type` whose params
// `check` accepts (it is given the pointer, which may be null, and returns the error).
template <class T, class Check>
cudaError_t set_field(cudaGraphNode_t node, cudaGraphNodeType type, T CUgraphNode_st::*field,
                      const T* params, Check&& check) {
  return with_node(node, type, [&](CUgraphNode_st& n) {
    if (cudaError_t e = check(params))
      return e;
    n.*field = *params;
    return cudaSuccess;
  });
}

} // namespace

namespace cuda_double::detail {

cudaError_t check_memcpy3d(const cudaMemcpy3DParms* p) {
  if (!p)
    return cudaErrorInvalidValue;
  // Only pointer copies exist in the double (no CUDA arrays).
  if (p->srcArray || p->dstArray || !p->srcPtr.ptr || !p->dstPtr.ptr)
    return cudaErrorInvalidValue;
  if (p->kind < cudaMemcpyHostToHost || p->kind > cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  if (p->extent.width == 0 || p->extent.height == 0 || p->extent.depth == 0)
    return cudaErrorInvalidValue;
  if (p->srcPtr.pitch < p->srcPos.x + p->extent.width ||
      p->dstPtr.pitch < p->dstPos.x + p->extent.width) {
    return cudaErrorInvalidPitchValue;
  }
  return cudaSuccess;
}

cudaError_t check_add_node(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                           std::size_t count) {
  return check_add(out, graph, deps, count);
}

} // namespace cuda_double::detail

extern "C" {

cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  return api(__func__, [&] {
    if (!pGraph || flags != 0)
      return cudaErrorInvalidValue;
    *pGraph = new_graph(true);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return api(__func__, [&] {
    // Conditional bodies belong to their node.
    if (!live_graph(graph) || graph->owner)
      return cudaErrorInvalidValue;
    // A graph still receiving captured work must outlive the capture; one whose body receives it
    // is destroyed (the H200 returns cudaSuccess) and leaves that capture orphaned.
    for (const auto& [id, c] : state().captures) {
      if (c->graph == graph)
        return cudaErrorIllegalState;
    }
    destroy_graph(graph);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                  const cudaGraphNode_t* pDependencies, size_t numDependencies) {
  return api(__func__, [&] {
    return add(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeEmpty, no_check,
               [](CUgraphNode_st&) {});
  });
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                 const cudaHostNodeParams* pNodeParams) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeHost,
        [&] { return pNodeParams && pNodeParams->fn ? cudaSuccess : cudaErrorInvalidValue; },
        [&](CUgraphNode_st& n) { n.host = *pNodeParams; });
  });
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const cudaMemsetParams* pMemsetParams) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemset,
        [&] { return pMemsetParams ? check_memset(*pMemsetParams, true) : cudaErrorInvalidValue; },
        [&](CUgraphNode_st& n) { n.memset = *pMemsetParams; });
  });
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const cudaMemcpy3DParms* pCopyParams) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemcpy,
        [&] { return check_memcpy3d(pCopyParams); },
        [&](CUgraphNode_st& n) { n.memcpy = *pCopyParams; });
  });
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                     void* dst, const void* src, size_t count,
                                     cudaMemcpyKind kind) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemcpy,
        [&] {
          return count == 0 ? cudaErrorInvalidValue : check_memcpy(dst, src, count, kind, true);
        },
        [&](CUgraphNode_st& n) { n.memcpy = memcpy1d_params(dst, src, count, kind); });
  });
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t* pDependencies,
                                        size_t numDependencies, cudaEvent_t event) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeEventRecord,
        [&] { return state().events.count(event) ? cudaSuccess : cudaErrorInvalidValue; },
        [&](CUgraphNode_st& n) { n.event = event; });
  });
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      cudaEvent_t event) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeWaitEvent,
        [&] { return state().events.count(event) ? cudaSuccess : cudaErrorInvalidValue; },
        [&](CUgraphNode_st& n) { n.event = event; });
  });
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                     cudaMemAllocNodeParams* nodeParams) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemAlloc,
        [&] {
          if (!nodeParams || nodeParams->bytesize == 0)
            return cudaErrorInvalidValue;
          const cudaMemPoolProps& p = nodeParams->poolProps;
          if (p.allocType != cudaMemAllocationTypePinned ||
              p.location.type != cudaMemLocationTypeDevice) {
            return cudaErrorInvalidValue;
          }
          return valid_device(p.location.id) ? cudaSuccess : cudaErrorInvalidDevice;
        },
        [&](CUgraphNode_st& n) {
          nodeParams->dptr =
              reserve_graph_allocation(nodeParams->bytesize, nodeParams->poolProps.location.id);
          n.alloc = *nodeParams;
        });
  });
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                    const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                    void* dptr) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemFree,
        [&] {
          // Free nodes release graph allocations only.
          const Allocation* a = find_allocation(dptr);
          return a && a->base == dptr && a->kind == Allocation::Kind::graph ? cudaSuccess
                                                                            : cudaErrorInvalidValue;
        },
        [&](CUgraphNode_st& n) { n.free_ptr = dptr; });
  });
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph) {
  return api(__func__, [&] {
    return add(
        pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeGraph,
        [&] {
          if (!live_graph(childGraph) || childGraph == graph)
            return cudaErrorInvalidValue;
          // Documented: no memory or conditional nodes in a child graph.
          return has_memory_nodes(*childGraph, false) || has_conditional_nodes(*childGraph)
                     ? cudaErrorNotSupported
                     : cudaSuccess;
        },
        [&](CUgraphNode_st& n) { n.child.reset(clone_graph(*childGraph, false)); });
  });
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                     const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                     size_t numDependencies) {
  return api(__func__, [&] {
    if (!live_graph(graph))
      return cudaErrorInvalidValue;
    if (numDependencies && (!from || !to))
      return cudaErrorInvalidValue;
    for (std::size_t i = 0; i < numDependencies; ++i) {
      if (!is_node_of(graph, from[i]) || !is_node_of(graph, to[i]) || from[i] == to[i]) {
        return cudaErrorInvalidValue;
      }
      for (const Edge& e : to[i]->deps) {
        if (e.from == from[i])
          return cudaErrorInvalidValue; // already connected
      }
    }
    for (std::size_t i = 0; i < numDependencies; ++i) {
      to[i]->deps.push_back(Edge{from[i], edgeData ? edgeData[i] : cudaGraphEdgeData{}});
    }
    return cudaSuccess;
  });
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                        const cudaGraphNode_t* to,
                                        const cudaGraphEdgeData* edgeData, size_t numDependencies) {
  return api(__func__, [&] {
    if (!live_graph(graph))
      return cudaErrorInvalidValue;
    if (numDependencies && (!from || !to))
      return cudaErrorInvalidValue;
    for (std::size_t i = 0; i < numDependencies; ++i) {
      if (!is_node_of(graph, from[i]) || !is_node_of(graph, to[i]))
        return cudaErrorInvalidValue;
      auto& deps = to[i]->deps;
      auto it = std::find_if(deps.begin(), deps.end(), [&](const Edge& e) {
        return e.from == from[i] && (!edgeData || e.data == edgeData[i]);
      });
      if (it == deps.end())
        return cudaErrorInvalidValue;
    }
    for (std::size_t i = 0; i < numDependencies; ++i) {
      std::erase_if(to[i]->deps, [&](const Edge& e) { return e.from == from[i]; });
    }
    return cudaSuccess;
  });
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  return api(__func__, [&] {
    if (!live_node(node))
      return cudaErrorInvalidValue;
    if (capture_within(node))
      return cudaErrorIllegalState; // a body of it still receives captured work
    CUgraph_st* g = node->graph;
    for (auto& n : g->nodes)
      std::erase_if(n->deps, [&](const Edge& e) { return e.from == node; });
    state().nodes.erase(node);
    release_node_payload(*node);
    std::erase_if(g->nodes, [&](const auto& n) { return n.get() == node; });
    return cudaSuccess;
  });
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  return api(__func__, [&] {
    if (!live_graph(graph))
      return cudaErrorInvalidValue;
    std::vector<cudaGraphNode_t> all;
    for (auto& n : graph->nodes)
      all.push_back(n.get());
    return copy_list(all, nodes, numNodes);
  });
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes,
                                  size_t* pNumRootNodes) {
  return api(__func__, [&] {
    if (!live_graph(graph))
      return cudaErrorInvalidValue;
    std::vector<cudaGraphNode_t> roots;
    for (auto& n : graph->nodes) {
      if (n->deps.empty())
        roots.push_back(n.get());
    }
    return copy_list(roots, pRootNodes, pNumRootNodes);
  });
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                              cudaGraphEdgeData* edgeData, size_t* numEdges) {
  return api(__func__, [&] {
    if (!live_graph(graph) || !numEdges)
      return cudaErrorInvalidValue;
    if ((from == nullptr) != (to == nullptr))
      return cudaErrorInvalidValue;
    std::vector<cudaGraphNode_t> froms, tos;
    std::vector<cudaGraphEdgeData> data;
    for (auto& n : graph->nodes) {
      for (const Edge& e : n->deps) {
        froms.push_back(e.from);
        tos.push_back(n.get());
        data.push_back(e.data);
      }
    }
    std::size_t count = *numEdges;
    if (cudaError_t e = copy_edges(froms, data, from, edgeData, numEdges))
      return e;
    return copy_list(tos, to, &count);
  });
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* pType) {
  return api(__func__, [&] {
    if (!live_node(node) || !pType)
      return cudaErrorInvalidValue;
    *pType = node->type;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                         cudaGraphEdgeData* edgeData, size_t* pNumDependencies) {
  return api(__func__, [&] {
    if (!live_node(node))
      return cudaErrorInvalidValue;
    std::vector<cudaGraphNode_t> deps;
    std::vector<cudaGraphEdgeData> data;
    for (const Edge& e : node->deps) {
      deps.push_back(e.from);
      data.push_back(e.data);
    }
    return copy_edges(deps, data, pDependencies, edgeData, pNumDependencies);
  });
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* pDependentNodes,
                                           cudaGraphEdgeData* edgeData,
                                           size_t* pNumDependentNodes) {
  return api(__func__, [&] {
    if (!live_node(node))
      return cudaErrorInvalidValue;
    std::vector<cudaGraphNode_t> outs;
    std::vector<cudaGraphEdgeData> data;
    for (auto& n : node->graph->nodes) {
      for (const Edge& e : n->deps) {
        if (e.from == node) {
          outs.push_back(n.get());
          data.push_back(e.data);
        }
      }
    }
    return copy_edges(outs, data, pDependentNodes, edgeData, pNumDependentNodes);
  });
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* pNodeParams) {
  return api(__func__, [&] {
    return get_field(node, cudaGraphNodeTypeHost, &CUgraphNode_st::host, pNodeParams);
  });
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node,
                                       const cudaHostNodeParams* pNodeParams) {
  return api(__func__, [&] {
    return set_field(node, cudaGraphNodeTypeHost, &CUgraphNode_st::host, pNodeParams,
                     [](const cudaHostNodeParams* p) {
                       return p && p->fn ? cudaSuccess : cudaErrorInvalidValue;
                     });
  });
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* pNodeParams) {
  return api(__func__, [&] {
    return get_field(node, cudaGraphNodeTypeMemset, &CUgraphNode_st::memset, pNodeParams);
  });
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node,
                                         const cudaMemsetParams* pNodeParams) {
  return api(__func__, [&] {
    return set_field(node, cudaGraphNodeTypeMemset, &CUgraphNode_st::memset, pNodeParams,
                     [](const cudaMemsetParams* p) {
                       return p ? check_memset(*p, true) : cudaErrorInvalidValue;
                     });
  });
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* pNodeParams) {
  return api(__func__, [&] {
    return get_field(node, cudaGraphNodeTypeMemcpy, &CUgraphNode_st::memcpy, pNodeParams);
  });
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node,
                                         const cudaMemcpy3DParms* pNodeParams) {
  return api(__func__, [&] {
    // As the H200 (benchmark/probes/setparams_refusals.cu): an operand the kind names device
    // memory is CUDA memory (a 1-D copy's checked; pageable refused).
    return set_field(node, cudaGraphNodeTypeMemcpy, &CUgraphNode_st::memcpy, pNodeParams,
                     [](const cudaMemcpy3DParms* p) {
                       if (cudaError_t e = check_memcpy3d(p))
                         return e;
                       if (p->extent.height != 1 || p->extent.depth != 1)
                         return cudaSuccess;
                       return check_memcpy(static_cast<char*>(p->dstPtr.ptr) + p->dstPos.x,
                                           static_cast<const char*>(p->srcPtr.ptr) + p->srcPos.x,
                                           p->extent.width, p->kind, true);
                     });
  });
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src,
                                           size_t count, cudaMemcpyKind kind) {
  return api(__func__, [&] {
    return with_node(node, cudaGraphNodeTypeMemcpy, [&](CUgraphNode_st& n) {
      if (count == 0)
        return cudaErrorInvalidValue;
      if (cudaError_t e = check_memcpy(dst, src, count, kind, true))
        return e;
      n.memcpy = memcpy1d_params(dst, src, count, kind);
      return cudaSuccess;
    });
  });
}

// The embedded graph, as CUDA returns it. Captures in the double never create child graph
// nodes, and the embedded graph is not user-visible: graph queries on it fail.
cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  return api(__func__, [&] {
    return with_node(node, cudaGraphNodeTypeGraph, [&](CUgraphNode_st& n) {
      if (!pGraph)
        return cudaErrorInvalidValue;
      *pGraph = n.child.get();
      return cudaSuccess;
    });
  });
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node,
                                           cudaMemAllocNodeParams* params_out) {
  return api(__func__, [&] {
    return get_field(node, cudaGraphNodeTypeMemAlloc, &CUgraphNode_st::alloc, params_out);
  });
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  return api(__func__, [&] {
    return with_node(node, cudaGraphNodeTypeMemFree, [&](CUgraphNode_st& n) {
      if (!dptr_out)
        return cudaErrorInvalidValue;
      std::memcpy(dptr_out, &n.free_ptr, sizeof n.free_ptr);
      return cudaSuccess;
    });
  });
}

cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  return api(__func__, [&] {
    return get_field(node, cudaGraphNodeTypeEventRecord, &CUgraphNode_st::event, event_out);
  });
}

cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  return api(__func__, [&] {
    return get_field(node, cudaGraphNodeTypeWaitEvent, &CUgraphNode_st::event, event_out);
  });
}

cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
  return api(__func__, [&] {
    if (!pGraphClone || !live_graph(originalGraph))
      return cudaErrorInvalidValue;
    // Documented: graphs with memory or conditional nodes cannot be cloned.
    if (has_memory_nodes(*originalGraph, false) || has_conditional_nodes(*originalGraph))
      return cudaErrorNotSupported;
    *pGraphClone = clone_graph(*originalGraph, true);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t originalNode,
                                     cudaGraph_t clonedGraph) {
  return api(__func__, [&] {
    if (!pNode || !live_graph(clonedGraph))
      return cudaErrorInvalidValue;
    auto it = clonedGraph->clone_of.find(originalNode);
    if (it == clonedGraph->clone_of.end() || !state().nodes.count(it->second))
      return cudaErrorInvalidValue;
    *pNode = it->second;
    return cudaSuccess;
  });
}

} // extern "C"
