// Conditional nodes: handles, cudaGraphAddNode, body graphs, their place in clones,
// instantiation and launch, and the control API that stands in for device code.
//
// What was seen on the H200 and what the double guessed: docs/testing.md.
#include "state.hpp"

#include <cuda_double/control.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

using namespace cuda_double::detail;

namespace {

ConditionalHandle* find_handle(unsigned long long key) {
  auto it = state().cond_handles.find(key);
  return it == state().cond_handles.end() ? nullptr : &it->second;
}

const HandleRef* find_ref(const CUgraph_st& graph, cudaGraphConditionalHandle value) {
  for (const HandleRef& r : graph.handles) {
    if (r.value == value)
      return &r;
  }
  return nullptr;
}

CUgraph_st* root_of(CUgraph_st* graph) {
  while (graph->owner)
    graph = graph->owner->graph;
  return graph;
}

// The records of `value` in `graph` and the graphs nested in it (bodies, child graphs).
void collect(const CUgraph_st& graph, cudaGraphConditionalHandle value,
             std::vector<ConditionalHandle*>& found) {
  if (const HandleRef* r = find_ref(graph, value)) {
    if (ConditionalHandle* h = find_handle(r->key))
      found.push_back(h);
  }
  for (const auto& n : graph.nodes) {
    if (n->child)
      collect(*n->child, value, found);
    for (std::size_t b = 0; n->cond && b < n->cond->bodies.size(); ++b)
      collect(*n->cond->bodies[b], value, found);
  }
}

// The control API's lookup: `found` holds the candidates; more than one is the caller's
// ambiguity (handles are numbered per graph), none an unknown handle (null unless `required`).
ConditionalHandle* pick(std::vector<ConditionalHandle*> found, const char* fn, bool required) {
  if (found.size() > 1) {
    throw std::invalid_argument(std::string{"cuda_double::"} + fn +
                                ": several graphs have a condition handle of this value (CUDA "
                                "numbers them per graph): name the graph or the executable");
  }
  if (found.empty() && required)
    throw std::invalid_argument(std::string{"cuda_double::"} + fn + ": unknown condition handle");
  return found.empty() ? nullptr : found.front();
}

ConditionalHandle* lookup(cudaGraphConditionalHandle value, const char* fn, bool required) {
  std::vector<ConditionalHandle*> found;
  for (auto& [key, h] : state().cond_handles) {
    if (h.number == value)
      found.push_back(&h);
  }
  return pick(std::move(found), fn, required);
}

ConditionalHandle* lookup(cudaGraph_t graph, cudaGraphConditionalHandle value, const char* fn,
                          bool required) {
  if (!graph || !live_graph_or_body(graph))
    throw std::invalid_argument(std::string{"cuda_double::"} + fn + ": not a live graph");
  std::vector<ConditionalHandle*> found;
  collect(*root_of(graph), value, found);
  return pick(std::move(found), fn, required);
}

ConditionalHandle* lookup(cudaGraphExec_t exec, cudaGraphConditionalHandle value, const char* fn,
                          bool required) {
  if (!exec || !state().execs.count(exec))
    throw std::invalid_argument(std::string{"cuda_double::"} + fn + ": not a live executable");
  std::vector<ConditionalHandle*> found;
  collect(*exec->graph, value, found);
  return pick(std::move(found), fn, required);
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
  // The graph that receives the node must have made a handle of this value (not an enclosing
  // graph either), which serves one node at a time (both seen on the H200). Values are numbered
  // per graph: another graph's handle of the same value is accepted as this graph's (the H200).
  const HandleRef* ref = find_ref(*graph, params.handle);
  ConditionalHandle* h = ref ? find_handle(ref->key) : nullptr;
  if (!h || h->node)
    return cudaErrorInvalidValue;
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
  cond->key = ref->key;
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
unsigned evaluate(unsigned long long key, bool& scripted) {
  scripted = false;
  ConditionalHandle* h = find_handle(key);
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
  for (const HandleRef& h : graph.handles) {
    const bool used = std::any_of(graph.nodes.begin(), graph.nodes.end(), [&](const auto& n) {
      return n->cond && n->cond->handle == h.value;
    });
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
  cond->key = source.cond->key;
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
  if (ConditionalHandle* h = find_handle(node.cond->key); h && h->node == &node)
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

void retain_handles(const CUgraph_st& graph) {
  for (const HandleRef& r : graph.handles) {
    if (ConditionalHandle* h = find_handle(r.key))
      ++h->refs;
  }
}

void release_handles(CUgraph_st& graph) {
  for (const HandleRef& r : graph.handles) {
    ConditionalHandle* h = find_handle(r.key);
    if (h && --h->refs == 0)
      state().cond_handles.erase(r.key);
  }
  graph.handles.clear();
}

void apply_condition_defaults(const CUgraph_st& graph) {
  for (const HandleRef& r : graph.handles) {
    ConditionalHandle* h = find_handle(r.key);
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
    const std::size_t pick = evaluate(c.key, scripted) != 0 ? 0 : 1;
    return pick < c.bodies.size() ? run_body(*c.bodies[pick]) : cudaSuccess;
  }
  case cudaGraphCondTypeSwitch: {
    const unsigned pick = evaluate(c.key, scripted);
    return pick < c.bodies.size() ? run_body(*c.bodies[pick]) : cudaSuccess;
  }
  case cudaGraphCondTypeWhile: {
    std::vector<CUgraphNode_st*> order;
    topological_order(*c.bodies.front(), order);
    // Nothing in a body can change the value on the double (no kernels), so a long run on an
    // unscripted non-zero value is a loop that would never end.
    std::size_t unscripted = 0;
    while (evaluate(c.key, scripted) != 0) {
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

namespace {

// One control function for the three ways of naming a handle: by value alone (unambiguous only
// while one graph has a handle of that value), in a graph (or a body of it), in an executable.
template <class... Where>
void set_value(const char* fn, unsigned value, Where... where) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  lookup(where..., fn, true)->value = value;
}

template <class... Where>
void set_script(const char* fn, const std::vector<unsigned>& values, Where... where) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  lookup(where..., fn, true)->script.assign(values.begin(), values.end());
}

template <class... Where>
unsigned value_of(Where... where) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  const ConditionalHandle* h = lookup(where..., "conditional_value", false);
  return h ? h->value : 0;
}

template <class... Where>
std::size_t evaluations_of(Where... where) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  const ConditionalHandle* h = lookup(where..., "conditional_evaluations", false);
  return h ? h->evaluations : 0;
}

} // namespace

void set_conditional(cudaGraphConditionalHandle handle, unsigned value) {
  set_value("set_conditional", value, handle);
}
void set_conditional(cudaGraph_t graph, cudaGraphConditionalHandle handle, unsigned value) {
  set_value("set_conditional", value, graph, handle);
}
void set_conditional(cudaGraphExec_t exec, cudaGraphConditionalHandle handle, unsigned value) {
  set_value("set_conditional", value, exec, handle);
}

void script_conditional(cudaGraphConditionalHandle handle, std::vector<unsigned> values) {
  set_script("script_conditional", values, handle);
}
void script_conditional(cudaGraph_t graph, cudaGraphConditionalHandle handle,
                        std::vector<unsigned> values) {
  set_script("script_conditional", values, graph, handle);
}
void script_conditional(cudaGraphExec_t exec, cudaGraphConditionalHandle handle,
                        std::vector<unsigned> values) {
  set_script("script_conditional", values, exec, handle);
}

unsigned conditional_value(cudaGraphConditionalHandle handle) {
  return value_of(handle);
}
unsigned conditional_value(cudaGraph_t graph, cudaGraphConditionalHandle handle) {
  return value_of(graph, handle);
}
unsigned conditional_value(cudaGraphExec_t exec, cudaGraphConditionalHandle handle) {
  return value_of(exec, handle);
}

std::size_t conditional_evaluations(cudaGraphConditionalHandle handle) {
  return evaluations_of(handle);
}
std::size_t conditional_evaluations(cudaGraph_t graph, cudaGraphConditionalHandle handle) {
  return evaluations_of(graph, handle);
}
std::size_t conditional_evaluations(cudaGraphExec_t exec, cudaGraphConditionalHandle handle) {
  return evaluations_of(exec, handle);
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
    // Numbered per graph from 1, as on the H200; a body draws from its root graph's numbers
    // (the double's choice: device code names a handle by value alone).
    const cudaGraphConditionalHandle handle = root_of(graph)->next_handle++;
    const unsigned long long key = state().next_handle_key++;
    ConditionalHandle h;
    h.number = handle;
    h.refs = 1;
    h.default_value = defaultLaunchValue;
    h.flags = flags;
    // Without the flag CUDA leaves the value undefined and never applies the default: the H200
    // showed 0 at the first launch, and so does the double.
    h.value = flags ? defaultLaunchValue : 0;
    state().cond_handles.emplace(key, std::move(h));
    graph->handles.push_back(HandleRef{handle, key});
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
