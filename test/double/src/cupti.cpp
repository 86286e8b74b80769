// CUPTI, the few functions graphcap's annotations call, on the double's graphs.
//
// Ids follow what CUPTI does on the H200 (docs/annotations.md): node = graph id << 32 | creation
// index; an executable has an id of its own, and its nodes keep their template's indices.
#include "state.hpp"

#include <cuda_double/cupti_control.hpp>

#include <cupti.h>

#include <cstdint>

using namespace cuda_double::detail;

namespace {

struct CuptiState {
  std::uint64_t generation = 0; // of the double's state: reset() turns `held` off
  bool held = false;
};

CuptiState& cupti_state() {
  static CuptiState s;
  const std::uint64_t gen = state().generation.load();
  if (s.generation != gen) {
    s = CuptiState{};
    s.generation = gen;
  }
  return s;
}

// Like api(): counted, locked, answers "held" while another tool holds CUPTI. Faults injected
// with fail_call() are returned as CUPTI results (their numeric value).
template <class Body>
CUptiResult cupti_api(const char* name, Body&& body) {
  State& st = state();
  std::lock_guard<std::recursive_mutex> lock(st.mu);
  ++st.calls[name];
  if (cupti_state().held)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  cudaError_t injected = cudaSuccess;
  if (take_fault(name, injected))
    return static_cast<CUptiResult>(injected);
  return body();
}

bool live_graph_or_snapshot(const CUgraph_st* graph) {
  if (state().graphs.count(const_cast<CUgraph_st*>(graph)))
    return true;
  for (cudaGraphExec_t exec : state().execs) {
    if (exec->graph.get() == graph)
      return true;
  }
  return false;
}

} // namespace

namespace cuda_double {

void set_cupti_held_by_other_tool(bool held) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  cupti_state().held = held;
}

} // namespace cuda_double

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str)
    return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
  case CUPTI_SUCCESS:
    *str = "CUPTI_SUCCESS";
    break;
  case CUPTI_ERROR_INVALID_PARAMETER:
    *str = "CUPTI_ERROR_INVALID_PARAMETER";
    break;
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    break;
  case CUPTI_ERROR_MAX_LIMIT_REACHED:
    *str = "CUPTI_ERROR_MAX_LIMIT_REACHED";
    break;
  default:
    *str = "CUPTI_ERROR_UNKNOWN";
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t* pId) {
  return cupti_api(__func__, [&] {
    if (!pId || !graph || !live_graph_or_snapshot(graph))
      return CUPTI_ERROR_INVALID_PARAMETER;
    *pId = graph->id;
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t* nodeId) {
  return cupti_api(__func__, [&] {
    if (!nodeId || !node || !live_graph_or_snapshot(node->graph))
      return CUPTI_ERROR_INVALID_PARAMETER;
    *nodeId = (std::uint64_t{node->graph->id} << 32) | node->index;
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec graphExec, uint32_t* pId) {
  return cupti_api(__func__, [&] {
    if (!pId || !graphExec || !state().execs.count(graphExec))
      return CUPTI_ERROR_INVALID_PARAMETER;
    *pId = static_cast<std::uint32_t>(graphExec->id);
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  return cupti_api(__func__, [&] {
    return funcBufferRequested && funcBufferCompleted ? CUPTI_SUCCESS
                                                      : CUPTI_ERROR_INVALID_PARAMETER;
  });
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  return cupti_api(__func__, [&] {
    return kind == CUPTI_ACTIVITY_KIND_INVALID ? CUPTI_ERROR_INVALID_KIND : CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  return cupti_api(__func__, [&] {
    return kind == CUPTI_ACTIVITY_KIND_INVALID ? CUPTI_ERROR_INVALID_KIND : CUPTI_SUCCESS;
  });
}

// No kernel ever runs on the double, so there is never a record to deliver.
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  return cupti_api(__func__, [] { return CUPTI_SUCCESS; });
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t*, size_t, CUpti_Activity** record) {
  return cupti_api(__func__, [&] {
    if (!record)
      return CUPTI_ERROR_INVALID_PARAMETER;
    return CUPTI_ERROR_MAX_LIMIT_REACHED; // the end of a buffer
  });
}

} // extern "C"
