// Stream capture: capture sequences, frontiers, the three capture modes and
// the rules whose violation invalidates a capture.
#include "state.hpp" // with cupti.h, which declares the parameter structs

#include <algorithm>

using namespace cuda_double::detail;

namespace cuda_double::detail {

Capture* find_capture(unsigned long long id) {
  auto it = state().captures.find(id);
  return it == state().captures.end() ? nullptr : it->second.get();
}

Capture* event_capture(const CUevent_st* event) {
  // An event recorded in a capture that has ended since carries no work.
  return event->state == CUevent_st::State::captured ? find_capture(event->capture_id) : nullptr;
}

void invalidate(Capture* capture) {
  if (capture)
    capture->invalidated = true;
}

cudaError_t check_legacy_implicit(const CUstream_st* stream) {
  if (stream->kind != CUstream_st::Kind::legacy)
    return cudaSuccess;
  bool hit = false;
  for (auto& [id, c] : state().captures) {
    for (cudaStream_t s : c->streams) {
      if (s->blocking() && s->device == stream->device) {
        c->invalidated = true;
        hit = true;
      }
    }
  }
  return hit ? cudaErrorStreamCaptureImplicit : cudaSuccess;
}

cudaError_t begin_stream_op(cudaStream_t handle, Target& target) {
  CUstream_st* s = resolve_stream(handle);
  if (!s)
    return cudaErrorInvalidResourceHandle;
  target.stream = s;
  if (s->capture) {
    if (s->capture->invalidated)
      return cudaErrorStreamCaptureInvalidated;
    target.capture = s->capture;
    return cudaSuccess;
  }
  return check_legacy_implicit(s);
}

CUgraphNode_st* capture_node(const Target& target, cudaGraphNodeType type) {
  CUstream_st* s = target.stream;
  CUgraphNode_st* n = add_node(target.capture->graph, type, s->frontier.data(),
                               s->frontier_edges.data(), s->frontier.size());
  s->frontier.assign(1, n);
  s->frontier_edges.assign(1, cudaGraphEdgeData{});
  return n;
}

cudaError_t check_unsafe_call() {
  const ThreadState& ts = thread_state();
  if (ts.mode == cudaStreamCaptureModeRelaxed)
    return cudaSuccess;
  const std::thread::id me = std::this_thread::get_id();
  bool hit = false;
  for (auto& [id, c] : state().captures) {
    // Own non-relaxed captures forbid the call in global and thread-local
    // mode; other threads' global captures only in global mode.
    const bool own = c->thread == me && c->mode != cudaStreamCaptureModeRelaxed;
    const bool foreign = ts.mode == cudaStreamCaptureModeGlobal && c->thread != me &&
                         c->mode == cudaStreamCaptureModeGlobal;
    if (own || foreign) {
      c->invalidated = true;
      hit = true;
    }
  }
  return hit ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t check_device_sync() {
  if (state().captures.empty())
    return cudaSuccess;
  for (auto& [id, c] : state().captures)
    c->invalidated = true;
  return cudaErrorStreamCaptureUnsupported;
}

namespace {

void leave_capture(Capture& c) {
  for (cudaStream_t s : c.streams) {
    s->capture = nullptr;
    s->frontier.clear();
    s->frontier_edges.clear();
  }
  c.streams.clear();
}

void drop_capture(Capture& c) {
  leave_capture(c);
  if (c.owns_graph && state().graphs.count(c.graph))
    destroy_graph(c.graph);
  state().captures.erase(c.id);
}

// A capture that fails to end takes its graph with it: CUDA destroys the graph it was into, one
// the caller made (benchmark/probes/body_abandon.cu, case N) or a conditional body, which its
// node still holds (cases A, F: the parent's destruction then crashes on the H200).
void fail_capture(Capture& c) {
  CUgraph_st* const target = c.graph;
  const bool owned = c.owns_graph;
  drop_capture(c);
  if (owned || target == nullptr)
    return;
  if (state().graphs.count(target)) {
    destroy_graph(target);
  } else if (state().bodies.count(target)) {
    release_graph_contents(*target);
    target->destroyed_by_capture = true;
    state().bodies.erase(target);
  }
}

// A joined stream's last work must already be ordered before the origin
// stream's frontier: every node of its frontier is an ancestor-or-self of
// the origin's frontier.
bool all_joined(const Capture& c) {
  std::unordered_set<const CUgraphNode_st*> seen;
  std::vector<const CUgraphNode_st*> todo(c.origin->frontier.begin(), c.origin->frontier.end());
  while (!todo.empty()) {
    const CUgraphNode_st* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second)
      continue;
    for (const Edge& e : n->deps)
      todo.push_back(e.from);
  }
  for (cudaStream_t s : c.streams) {
    if (s == c.origin)
      continue;
    for (const CUgraphNode_st* n : s->frontier) {
      if (!seen.count(n))
        return false;
    }
  }
  return true;
}

bool valid_mode(cudaStreamCaptureMode mode) {
  return mode == cudaStreamCaptureModeGlobal || mode == cudaStreamCaptureModeThreadLocal ||
         mode == cudaStreamCaptureModeRelaxed;
}

cudaError_t begin_capture(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* deps,
                          const cudaGraphEdgeData* edges, std::size_t count,
                          cudaStreamCaptureMode mode) {
  CUstream_st* s = resolve_stream(stream);
  if (!s)
    return cudaErrorInvalidResourceHandle;
  if (!valid_mode(mode))
    return cudaErrorInvalidValue;
  if (s->kind == CUstream_st::Kind::legacy)
    return cudaErrorStreamCaptureUnsupported;
  if (s->capture)
    return cudaErrorIllegalState;
  State& st = state();
  if (graph) {
    if (!live_graph_or_body(graph)) // a conditional body too
      return cudaErrorInvalidValue;
    if (count && !deps)
      return cudaErrorInvalidValue;
    for (std::size_t i = 0; i < count; ++i) {
      if (!is_node_of(graph, deps[i]))
        return cudaErrorInvalidValue;
    }
  }
  auto c = std::make_unique<Capture>();
  c->id = st.next_capture_id++;
  c->owns_graph = graph == nullptr;
  c->graph = graph ? graph : new_graph(true);
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = s;
  c->streams.push_back(s);
  s->capture = c.get();
  s->frontier.assign(deps, deps + (graph ? count : 0));
  s->frontier_edges.assign(s->frontier.size(), cudaGraphEdgeData{});
  if (graph && edges)
    std::copy(edges, edges + count, s->frontier_edges.begin());
  st.captures.emplace(c->id, std::move(c));
  return cudaSuccess;
}

// Capture queries on the legacy stream report an implicit dependency on a
// blocking capture without invalidating it.
bool legacy_blocked(const CUstream_st* s) {
  if (s->kind != CUstream_st::Kind::legacy)
    return false;
  for (auto& [id, c] : state().captures) {
    for (cudaStream_t cs : c->streams) {
      if (cs->blocking() && cs->device == s->device)
        return true;
    }
  }
  return false;
}

void add_to_frontier(CUstream_st* s, const std::vector<CUgraphNode_st*>& nodes,
                     const cudaGraphEdgeData* edges) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (std::find(s->frontier.begin(), s->frontier.end(), nodes[i]) != s->frontier.end())
      continue;
    s->frontier.push_back(nodes[i]);
    s->frontier_edges.push_back(edges ? edges[i] : cudaGraphEdgeData{});
  }
}

} // namespace

void end_all_captures() {
  while (!state().captures.empty())
    drop_capture(*state().captures.begin()->second);
}

} // namespace cuda_double::detail

extern "C" {

// The capture's begin and end hand CUPTI their parameters (generated_cuda_runtime_api_meta.h's
// structs), as the runtime does: a CUPTI client reads the stream from them.
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  const cudaStreamBeginCapture_v10000_params params{stream, mode};
  return api_with_params(__func__, &params,
                         [&] { return begin_capture(stream, nullptr, nullptr, nullptr, 0, mode); });
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData* dependencyData,
                                          size_t numDependencies, cudaStreamCaptureMode mode) {
  const cudaStreamBeginCaptureToGraph_v12030_params params{
      stream, graph, dependencies, dependencyData, numDependencies, mode};
  return api_with_params(__func__, &params, [&] {
    if (!graph)
      return cudaErrorInvalidValue;
    return begin_capture(stream, graph, dependencies, dependencyData, numDependencies, mode);
  });
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  const cudaStreamEndCapture_v10000_params params{stream, pGraph};
  return api_with_params(__func__, &params, [&] {
    CUstream_st* s = resolve_stream(stream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    if (!pGraph)
      return cudaErrorInvalidValue;
    Capture* c = s->capture;
    if (!c)
      return cudaErrorIllegalState;
    if (c->origin != s) {
      invalidate(c);
      return cudaErrorStreamCaptureUnmatched;
    }
    if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id()) {
      return cudaErrorStreamCaptureWrongThread;
    }
    *pGraph = nullptr;
    if (c->orphaned) {
      violation("cudaStreamEndCapture of a capture whose body graph was destroyed with its "
                "parent graph (the H200 crashes here: benchmark/probes/body_abandon.cu)");
      drop_capture(*c);
      return cudaErrorStreamCaptureInvalidated;
    }
    if (c->invalidated) {
      fail_capture(*c);
      return cudaErrorStreamCaptureInvalidated;
    }
    if (!all_joined(*c)) {
      fail_capture(*c);
      return cudaErrorStreamCaptureUnjoined;
    }
    *pGraph = c->graph;
    leave_capture(*c);
    state().captures.erase(c->id);
    return cudaSuccess;
  });
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
  return api(__func__, [&] {
    if (!pCaptureStatus)
      return cudaErrorInvalidValue;
    CUstream_st* s = resolve_stream(stream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    if (legacy_blocked(s))
      return cudaErrorStreamCaptureImplicit;
    *pCaptureStatus = !s->capture               ? cudaStreamCaptureStatusNone
                      : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                                : cudaStreamCaptureStatusActive;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                     cudaStreamCaptureStatus* captureStatus_out,
                                     unsigned long long* id_out, cudaGraph_t* graph_out,
                                     const cudaGraphNode_t** dependencies_out,
                                     const cudaGraphEdgeData** edgeData_out,
                                     size_t* numDependencies_out) {
  return api(__func__, [&] {
    if (!captureStatus_out)
      return cudaErrorInvalidValue;
    if (edgeData_out && !dependencies_out)
      return cudaErrorInvalidValue;
    CUstream_st* s = resolve_stream(stream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    if (legacy_blocked(s))
      return cudaErrorStreamCaptureImplicit;
    Capture* c = s->capture;
    if (!c) {
      *captureStatus_out = cudaStreamCaptureStatusNone;
      return cudaSuccess;
    }
    if (dependencies_out && !edgeData_out) {
      // Dropping non-default edge data would lose information.
      for (const cudaGraphEdgeData& e : s->frontier_edges) {
        if (!(e == cudaGraphEdgeData{}))
          return cudaErrorLossyQuery;
      }
    }
    *captureStatus_out =
        c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    if (id_out)
      *id_out = c->id;
    if (c->invalidated)
      return cudaSuccess;
    if (graph_out)
      *graph_out = c->graph;
    if (dependencies_out)
      *dependencies_out = s->frontier.data();
    if (edgeData_out)
      *edgeData_out = s->frontier_edges.data();
    if (numDependencies_out)
      *numDependencies_out = s->frontier.size();
    return cudaSuccess;
  });
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                const cudaGraphEdgeData* dependencyData,
                                                size_t numDependencies, unsigned int flags) {
  return api(__func__, [&] {
    CUstream_st* s = resolve_stream(stream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    if (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies) {
      return cudaErrorInvalidValue;
    }
    if (!s->capture)
      return cudaErrorIllegalState;
    if (s->capture->invalidated)
      return cudaErrorStreamCaptureInvalidated;
    if (numDependencies && !dependencies)
      return cudaErrorInvalidValue;
    std::vector<CUgraphNode_st*> nodes(dependencies, dependencies + numDependencies);
    for (CUgraphNode_st* n : nodes) {
      if (!is_node_of(s->capture->graph, n))
        return cudaErrorInvalidValue;
    }
    if (flags == cudaStreamSetCaptureDependencies) {
      s->frontier.clear();
      s->frontier_edges.clear();
    }
    add_to_frontier(s, nodes, dependencyData);
    return cudaSuccess;
  });
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  return api(__func__, [&] {
    if (!mode || !valid_mode(*mode))
      return cudaErrorInvalidValue;
    std::swap(thread_state().mode, *mode);
    return cudaSuccess;
  });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return api(__func__, [&] {
    State& st = state();
    if (!st.events.count(event))
      return cudaErrorInvalidResourceHandle;
    if (flags & ~static_cast<unsigned>(cudaEventWaitExternal))
      return cudaErrorInvalidValue;
    CUstream_st* s = resolve_stream(stream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    Capture* source = event_capture(event);
    if (source && !s->capture) {
      // Fork: waiting on an event recorded in a capture joins the
      // stream to that capture, starting from the event's frontier.
      if (s->kind == CUstream_st::Kind::legacy) {
        if (cudaError_t e = check_legacy_implicit(s))
          return e;
        invalidate(source);
        return cudaErrorStreamCaptureUnsupported;
      }
      s->capture = source;
      source->streams.push_back(s);
      s->frontier.clear();
      s->frontier_edges.clear();
      add_to_frontier(s, event->nodes, nullptr);
      return source->invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
    }
    Target t;
    if (cudaError_t e = begin_stream_op(stream, t))
      return e;
    if (!t.capture)
      return cudaSuccess; // eager: the event has completed
    if (flags & cudaEventWaitExternal) {
      capture_node(t, cudaGraphNodeTypeWaitEvent)->event = event;
      return cudaSuccess;
    }
    if (!source && event->state == CUevent_st::State::captured) {
      // Recorded in a capture that has ended since (a piecewise graph's earlier segment): CUDA
      // refuses the wait and invalidates the capture (benchmark/probes/event_across_captures.cu
      // on the H200, driver 580).
      invalidate(t.capture);
      return cudaErrorInvalidValue;
    }
    if (source == t.capture) {
      add_to_frontier(s, event->nodes, nullptr);
      return cudaSuccess;
    }
    if (source) {
      invalidate(t.capture);
      return cudaErrorStreamCaptureMerge;
    }
    if (event->state == CUevent_st::State::recorded) {
      // Waiting on work outside the capture cannot be expressed.
      invalidate(t.capture);
      return cudaErrorStreamCaptureIsolation;
    }
    return cudaSuccess; // never recorded: nothing to wait for
  });
}

} // extern "C"
