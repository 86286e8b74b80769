// Conditional nodes: handles, cudaGraphAddNode, body graphs, their place in clones,
// instantiation and launch, and the control API that stands in for device code.
//
// What was seen on the H200 and what the double guessed: docs/testing.md.
#include "state.hpp"

#include <cuda_double/control.hpp>

#include <algorithm>
#include <stdexcept>

using namespace cuda_double::detail;

namespace {

// Process-unique: reset() does not rewind it, so a handle kept across a reset never names a
// new one. Starts high so that a small number passed by mistake is not a handle.
cudaGraphConditionalHandle next_handle = 0x100000001ULL;

ConditionalHandle* find_handle(cudaGraphConditionalHandle handle) {
  auto it = state().cond_handles.find(handle);
  return it == state().cond_handles.end() ? nullptr : &it->second;
}

// What CUDA allows in a body, recursively through child graphs and nested bodies.
bool allowed_in_body(cudaGraphNodeType type) {
  switch (type) {
  case cudaGraphNodeTypeKernel:
  case cudaGraphNodeTypeEmpty:
  case cudaGraphNodeTypeGraph:
  case cudaGraphNodeTypeMemset:
  case cudaGraphNodeTypeMemcpy:
  case cudaGraphNodeTypeConditional:
    return true;
  default:
    return false;
  }
}

// A body of a node of a user-visible graph: its nodes are the user's to query and capture into,
// but the graph itself is not one of the user's (live_graphs(), cudaGraphDestroy).
CUgraph_st* new_body(CUgraphNode_st* owner) {
  CUgraph_st* body = new_graph(false);
  body->user_visible = true;
  body->owner = owner;
  state().bodies.insert(body);
  return body;
}

void adopt_body(Conditional& cond, CUgraph_st* body) {
  cond.bodies.emplace_back(body);
  cond.body_array.push_back(body);
}

cudaError_t add_conditional(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                            const cudaGraphEdgeData* edges, std::size_t count,
                            cudaConditionalNodeParams& params) {
  // The handle must have been created on the graph that receives the node (not on an enclosing
  // graph either), and serves one node at a time (both seen on the H200).
  ConditionalHandle* h = find_handle(params.handle);
  if (!h || h->node ||
      std::find(graph->handles.begin(), graph->handles.end(), params.handle) ==
          graph->handles.end()) {
    return cudaErrorInvalidValue;
  }
  switch (params.type) {
  case cudaGraphCondTypeIf:
    if (params.size != 1 && params.size != 2)
      return cudaErrorInvalidValue;
    break;
  case cudaGraphCondTypeWhile:
    if (params.size != 1)
      return cudaErrorInvalidValue;
    break;
  case cudaGraphCondTypeSwitch:
    if (params.size == 0)
      return cudaErrorInvalidValue;
    break;
  default:
    return cudaErrorInvalidValue;
  }
  CUgraphNode_st* n = add_node(graph, cudaGraphNodeTypeConditional, deps, edges, count);
  auto cond = std::make_unique<Conditional>();
  cond->handle = params.handle;
  cond->type = params.type;
  for (unsigned i = 0; i < params.size; ++i)
    adopt_body(*cond, new_body(n));
  params.phGraph_out = cond->body_array.data();
  n->cond = std::move(cond);
  h->node = n;
  *out = n;
  return cudaSuccess;
}

// One evaluation of a handle by a conditional node: the next scripted value, if any, becomes
// the handle's value first.
unsigned evaluate(cudaGraphConditionalHandle handle, bool& scripted) {
  scripted = false;
  ConditionalHandle* h = find_handle(handle);
  if (!h)
    return 0;
  ++h->evaluations;
  if (!h->script.empty()) {
    h->value = h->script.front();
    h->script.pop_front();
    scripted = true;
  }
  return h->value;
}

cudaError_t run_body(const CUgraph_st& body) {
  std::vector<CUgraphNode_st*> order;
  topological_order(body, order); // acyclic: checked at instantiation
  return run_graph(order);
}

// Instantiation rules for `graph`; `in_body` once inside a conditional body, `own_handles` for
// the graphs whose handles must each be used by one of their nodes (not child graphs).
// Memory no allocation of the double holds (malloc'ed host memory, a host stack).
bool pageable(const void* pointer) {
  const Allocation* a = find_allocation(pointer);
  return pointer != nullptr && (a == nullptr || !a->mapped);
}

bool touches_pageable_memory(const cudaMemcpy3DParms& copy) {
  return (copy.srcArray == nullptr && pageable(copy.srcPtr.ptr)) ||
         (copy.dstArray == nullptr && pageable(copy.dstPtr.ptr));
}

cudaError_t check_tree(const CUgraph_st& graph, bool in_body, bool own_handles,
                       cudaGraphInstantiateResult& result, cudaGraphNode_t& err_node) {
  for (const auto& n : graph.nodes) {
    if (in_body && !allowed_in_body(n->type)) {
      // As on the H200: the node is accepted at creation, the graph refused here.
      result = cudaGraphInstantiateNodeOperationNotSupported;
      err_node = n.get();
      return cudaErrorInvalidValue;
    }
    if (in_body && n->type == cudaGraphNodeTypeMemcpy && touches_pageable_memory(n->memcpy)) {
      // As on the H200 (benchmark/probes/body_abandon.cu, case H1): a memcpy node in a body may
      // not touch pageable host memory; the result it reports is this one.
      result = cudaGraphInstantiateMultipleDevicesNotSupported;
      err_node = n.get();
      return cudaErrorInvalidValue;
    }
    if (n->child) {
      if (cudaError_t e = check_tree(*n->child, in_body, false, result, err_node))
        return e;
    }
    for (std::size_t b = 0; n->cond && b < n->cond->bodies.size(); ++b) {
      if (n->cond->bodies[b]->destroyed_by_capture) {
        violation("a graph is instantiated whose conditional body CUDA destroyed when the body's "
                  "capture failed to end");
        result = cudaGraphInstantiateError;
        err_node = n.get();
        return cudaErrorInvalidValue;
      }
      std::vector<CUgraphNode_st*> order;
      if (!topological_order(*n->cond->bodies[b], order)) {
        result = cudaGraphInstantiateInvalidStructure;
        err_node = n.get();
        return cudaErrorInvalidValue;
      }
      if (cudaError_t e = check_tree(*n->cond->bodies[b], true, true, result, err_node))
        return e;
    }
  }
  if (!own_handles)
    return cudaSuccess;
  for (cudaGraphConditionalHandle h : graph.handles) {
    const bool used = std::any_of(graph.nodes.begin(), graph.nodes.end(),
                                  [&](const auto& n) { return n->cond && n->cond->handle == h; });
    if (!used) {
      // Documented: handles without a node may make instantiation fail.
      result = cudaGraphInstantiateConditionalHandleUnused;
      err_node = nullptr;
      return cudaErrorInvalidValue;
    }
  }
  return cudaSuccess;
}

} // namespace

namespace cuda_double::detail {

bool live_graph_or_body(const CUgraph_st* graph) {
  auto* g = const_cast<CUgraph_st*>(graph);
  return state().graphs.count(g) || state().bodies.count(g);
}

bool capture_within(const CUgraph_st* graph) {
  for (const auto& [id, c] : state().captures) {
    for (const CUgraph_st* g = c->graph; g; g = g->owner ? g->owner->graph : nullptr) {
      if (g == graph)
        return true;
    }
  }
  return false;
}

bool capture_within(const CUgraphNode_st* node) {
  for (const auto& [id, c] : state().captures) {
    for (const CUgraph_st* g = c->graph; g && g->owner; g = g->owner->graph) {
      if (g->owner == node)
        return true;
    }
  }
  return false;
}

bool has_conditional_nodes(const CUgraph_st& graph) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const auto& n) {
    return n->cond || (n->child && has_conditional_nodes(*n->child));
  });
}

void clone_conditional(const CUgraphNode_st& source, CUgraphNode_st& copy, bool user_visible) {
  auto cond = std::make_unique<Conditional>();
  cond->handle = source.cond->handle;
  cond->type = source.cond->type;
  for (const auto& body : source.cond->bodies) {
    CUgraph_st* b = clone_graph(*body, user_visible);
    if (user_visible) {
      // A body, not a graph of the user's own.
      state().graphs.erase(b);
      state().bodies.insert(b);
    }
    b->owner = &copy;
    adopt_body(*cond, b);
  }
  copy.cond = std::move(cond);
}

void release_conditional(CUgraphNode_st& node) {
  // The handle may serve another node once this one is gone.
  if (ConditionalHandle* h = find_handle(node.cond->handle); h && h->node == &node)
    h->node = nullptr;
  for (auto& body : node.cond->bodies) {
    if (body->destroyed_by_capture) {
      violation("a conditional body destroyed by the failed end of its capture is destroyed "
                "again with its node (the H200 crashes here: benchmark/probes/body_abandon.cu)");
    }
    // A capture still writing into the body (its parent graph was destroyed, or its parent
    // capture failed and took the graph with it): CUDA lets the graph go, and crashes when that
    // capture is ended or its stream destroyed later (the probe's cases J, M3, M4).
    for (auto& [id, c] : state().captures) {
      if (c->graph == body.get()) {
        c->invalidated = true;
        c->orphaned = true;
        c->graph = nullptr;
      }
    }
    release_graph_contents(*body);
    state().bodies.erase(body.get());
  }
  node.cond.reset();
}

cudaError_t check_conditionals(const CUgraph_st& graph, cudaGraphInstantiateResult& result,
                               cudaGraphNode_t& err_node) {
  return check_tree(graph, false, true, result, err_node);
}

void apply_condition_defaults(const CUgraph_st& graph) {
  for (cudaGraphConditionalHandle handle : graph.handles) {
    ConditionalHandle* h = find_handle(handle);
    if (h && (h->flags & cudaGraphCondAssignDefault))
      h->value = h->default_value;
  }
  for (const auto& n : graph.nodes) {
    if (n->child)
      apply_condition_defaults(*n->child);
    for (std::size_t b = 0; n->cond && b < n->cond->bodies.size(); ++b)
      apply_condition_defaults(*n->cond->bodies[b]);
  }
}

cudaError_t run_conditional(const CUgraphNode_st& node) {
  const Conditional& c = *node.cond;
  bool scripted = false;
  switch (c.type) {
  case cudaGraphCondTypeIf: {
    const std::size_t pick = evaluate(c.handle, scripted) != 0 ? 0 : 1;
    return pick < c.bodies.size() ? run_body(*c.bodies[pick]) : cudaSuccess;
  }
  case cudaGraphCondTypeSwitch: {
    const unsigned pick = evaluate(c.handle, scripted);
    return pick < c.bodies.size() ? run_body(*c.bodies[pick]) : cudaSuccess;
  }
  case cudaGraphCondTypeWhile: {
    std::vector<CUgraphNode_st*> order;
    topological_order(*c.bodies.front(), order);
    // Nothing in a body can change the value on the double (no kernels), so a long run on an
    // unscripted non-zero value is a loop that would never end.
    std::size_t unscripted = 0;
    while (evaluate(c.handle, scripted) != 0) {
      unscripted = scripted ? 0 : unscripted + 1;
      if (unscripted > cuda_double::endless_while_limit)
        return cudaErrorLaunchTimeout;
      if (cudaError_t e = run_graph(order))
        return e;
    }
    return cudaSuccess;
  }
  }
  return cudaSuccess;
}

} // namespace cuda_double::detail

namespace cuda_double {

void set_conditional(cudaGraphConditionalHandle handle, unsigned value) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  ConditionalHandle* h = find_handle(handle);
  if (!h)
    throw std::invalid_argument("cuda_double::set_conditional: unknown conditional handle");
  h->value = value;
}

void script_conditional(cudaGraphConditionalHandle handle, std::vector<unsigned> values) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  ConditionalHandle* h = find_handle(handle);
  if (!h)
    throw std::invalid_argument("cuda_double::script_conditional: unknown conditional handle");
  h->script.assign(values.begin(), values.end());
}

unsigned conditional_value(cudaGraphConditionalHandle handle) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  const ConditionalHandle* h = find_handle(handle);
  return h ? h->value : 0;
}

std::size_t conditional_evaluations(cudaGraphConditionalHandle handle) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  const ConditionalHandle* h = find_handle(handle);
  return h ? h->evaluations : 0;
}

std::size_t live_conditional_bodies() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return state().bodies.size();
}

} // namespace cuda_double

extern "C" {

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out,
                                             cudaGraph_t graph, unsigned int defaultLaunchValue,
                                             unsigned int flags) {
  // Not capture-unsafe: the capture's own graph is the usual target.
  return api(__func__, [&] {
    if (!pHandle_out || !graph || !live_graph_or_body(graph))
      return cudaErrorInvalidValue;
    if (flags != 0 && flags != cudaGraphCondAssignDefault)
      return cudaErrorInvalidValue;
    const cudaGraphConditionalHandle handle = next_handle++;
    ConditionalHandle h;
    h.default_value = defaultLaunchValue;
    h.flags = flags;
    // Without the flag CUDA leaves the value undefined and never applies the default: the H200
    // showed 0 at the first launch, and so does the double.
    h.value = flags ? defaultLaunchValue : 0;
    state().cond_handles.emplace(handle, std::move(h));
    graph->handles.push_back(handle);
    *pHandle_out = handle;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                             const cudaGraphNode_t* pDependencies,
                             const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                             cudaGraphNodeParams* nodeParams) {
  // Allowed on the graph of a capture in progress: callers then move the capture's
  // dependencies with cudaStreamUpdateCaptureDependencies.
  return api(__func__, [&] {
    if (cudaError_t e = check_add_node(pGraphNode, graph, pDependencies, numDependencies))
      return e;
    if (!nodeParams || nodeParams->reserved2 != 0)
      return cudaErrorInvalidValue;
    for (int r : nodeParams->reserved0) {
      if (r != 0)
        return cudaErrorInvalidValue;
    }
    switch (nodeParams->type) {
    case cudaGraphNodeTypeEmpty:
      *pGraphNode =
          add_node(graph, cudaGraphNodeTypeEmpty, pDependencies, dependencyData, numDependencies);
      return cudaSuccess;
    case cudaGraphNodeTypeConditional:
      return add_conditional(pGraphNode, graph, pDependencies, dependencyData, numDependencies,
                             nodeParams->conditional);
    default:
      return cudaErrorNotSupported; // not modelled through this entry point
    }
  });
}

} // extern "C"
