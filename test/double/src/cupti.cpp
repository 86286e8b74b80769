// CUPTI, the few functions graphcap's annotations call, on the double's graphs.
//
// Ids follow what CUPTI does on the H200 (docs/annotations.md): node = graph id << 32 | creation
// index; an executable has an id of its own, and its nodes keep their template's indices.
// The callback API has the one subscriber CUPTI allows and two kinds of callback points:
// RESOURCE / GRAPHNODE_CREATED, and the RUNTIME_API and DRIVER_API domains' entry and exit of
// every call the double models (api()). The activity API reports the kernel records a test queues
// (cuda_double::queue_kernel_activity): the double runs no kernel of its own.
#include "state.hpp"

#include <cuda_double/cupti_control.hpp>

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

using namespace cuda_double::detail;

// The handle cuptiSubscribe gives out (cupti_callbacks.h only declares it).
struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> enabled;
  std::set<CUpti_CallbackDomain> enabled_domains; // cuptiEnableDomain: every id of the domain
};

namespace {

struct CuptiState {
  std::uint64_t generation = 0;  // of the double's state: reset() clears everything below
  bool held = false;             // by another tool: every call refused
  bool subscriber_taken = false; // by another client in the process: cuptiSubscribe refused
  std::unique_ptr<CUpti_Subscriber_st> subscriber;
  // The last one released, kept alive so that the next subscriber gets another address: the
  // handle just released stays refused.
  std::unique_ptr<CUpti_Subscriber_st> released;
  std::set<CUpti_ActivityKind> enabled_activity;
  // Queued by queue_kernel_activity while kernel activity was enabled, for the next flush. The
  // names live here until the records naming them were delivered.
  std::vector<std::pair<cuda_double::kernel_activity, std::string>> queued;
};

// What cuptiActivityRegisterCallbacks registered. For the life of the process, as in CUPTI:
// reset() leaves it (graphcap registers once per process).
struct ActivityCallbacks {
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
};

ActivityCallbacks& activity_callbacks() {
  static ActivityCallbacks callbacks;
  return callbacks;
}

// Hands `due` to CUPTI's buffer callbacks as CONCURRENT_KERNEL records, a buffer at a time, as
// CUPTI does at a flush; called without the double's lock, as CUPTI calls from its own thread.
void deliver_activity(
    const ActivityCallbacks& callbacks,
    const std::vector<std::pair<cuda_double::kernel_activity, std::string>>& due) {
  std::size_t next = 0;
  while (next < due.size()) {
    std::uint8_t* buffer = nullptr;
    std::size_t size = 0;
    std::size_t max_records = 0;
    callbacks.requested(&buffer, &size, &max_records);
    const std::size_t fits = size / sizeof(CUpti_ActivityKernel10);
    if (buffer == nullptr || fits == 0)
      return; // no buffer: CUPTI drops the records
    std::size_t count = 0;
    for (; next < due.size() && count < fits; ++next, ++count) {
      const auto& [kernel, name] = due[next];
      CUpti_ActivityKernel10 record{};
      record.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      record.name = name.c_str();
      record.start = kernel.start_ns;
      record.end = kernel.end_ns;
      record.deviceId = kernel.device;
      record.streamId = kernel.stream;
      record.graphNodeId = kernel.graph_node_id;
      record.graphId = kernel.graph_id;
      std::memcpy(buffer + count * sizeof record, &record, sizeof record);
    }
    callbacks.completed(nullptr, 0, buffer, size, count * sizeof(CUpti_ActivityKernel10));
  }
}

CuptiState& cupti_state() {
  // Leaked, like state(): CUDA may still be called from static destructors.
  static CuptiState* s = new CuptiState;
  const std::uint64_t gen = state().generation.load();
  if (s->generation != gen) {
    *s = CuptiState{};
    s->generation = gen;
  }
  return *s;
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

// Ids run from 1 (0 is each domain's INVALID) to the domain's SIZE, exclusive.
bool valid_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  CUpti_CallbackId size = 0;
  switch (domain) {
  case CUPTI_CB_DOMAIN_DRIVER_API:
    size = CUPTI_DRIVER_TRACE_CBID_SIZE;
    break;
  case CUPTI_CB_DOMAIN_RUNTIME_API:
    size = CUPTI_RUNTIME_TRACE_CBID_SIZE;
    break;
  case CUPTI_CB_DOMAIN_RESOURCE:
    size = CUPTI_CBID_RESOURCE_SIZE;
    break;
  case CUPTI_CB_DOMAIN_SYNCHRONIZE:
    size = CUPTI_CBID_SYNCHRONIZE_SIZE;
    break;
  case CUPTI_CB_DOMAIN_NVTX:
    size = CUPTI_CBID_NVTX_SIZE;
    break;
  case CUPTI_CB_DOMAIN_STATE:
    size = CUPTI_CBID_STATE_SIZE;
    break;
  default:
    return false;
  }
  return cbid > 0 && cbid < size;
}

bool wants_node_created(const CuptiState& s) {
  return s.subscriber && s.subscriber->callback &&
         s.subscriber->enabled.count(
             {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED});
}

// The callback ids of the runtime and driver functions the double models (cupti_cbids.inc).
CUpti_CallbackId api_cbid(const char* name, bool driver) {
  struct Entry {
    const char* name;
    CUpti_CallbackId cbid;
  };
#define RUNTIME_CBID(function, id) Entry{function, id},
#define DRIVER_CBID(function, id)
  static constexpr Entry runtime[] = {
#include "cupti_cbids.inc"
  };
#undef RUNTIME_CBID
#undef DRIVER_CBID
#define RUNTIME_CBID(function, id)
#define DRIVER_CBID(function, id) Entry{function, id},
  static constexpr Entry driver_ids[] = {
#include "cupti_cbids.inc"
  };
#undef RUNTIME_CBID
#undef DRIVER_CBID
  for (const Entry& entry :
       driver ? std::span<const Entry>{driver_ids} : std::span<const Entry>{runtime}) {
    if (std::strcmp(entry.name, name) == 0)
      return entry.cbid;
  }
  return 0; // not in the table: not reported (regenerate cupti_cbids.inc)
}

bool wants_api_callback(const CuptiState& s, CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return s.subscriber && s.subscriber->callback && cbid != 0 &&
         (s.subscriber->enabled_domains.count(domain) ||
          s.subscriber->enabled.count({domain, cbid}));
}

std::atomic<std::uint32_t> next_correlation{1};

bool live_graph_or_snapshot(const CUgraph_st* graph) {
  if (live_graph_or_body(graph))
    return true;
  for (cudaGraphExec_t exec : state().execs) {
    if (exec->graph.get() == graph)
      return true;
  }
  return false;
}

} // namespace

namespace cuda_double::detail {

void note_node_created(CUgraphNode_st* node) {
  if (wants_node_created(cupti_state()))
    thread_state().created_nodes.emplace_back(node->graph, node);
}

void deliver_cupti_callbacks() {
  std::vector<std::pair<CUgraph_st*, CUgraphNode_st*>> nodes;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard<std::recursive_mutex> lock(state().mu);
    nodes.swap(thread_state().created_nodes); // none left after a reset(): they are gone
    const CuptiState& s = cupti_state();
    if (!wants_node_created(s)) // unsubscribed or disabled by another thread since
      return;
    callback = s.subscriber->callback;
    userdata = s.subscriber->userdata;
  }
  for (const auto& [graph, node] : nodes) {
    CUpti_GraphData data{};
    data.graph = graph;
    data.node = node;
    // Observed on the H200 (CUDA 13.0, driver 580): 0 (CU_GRAPH_NODE_TYPE_KERNEL) for every node
    // created by stream capture, whatever its type. Callers must not trust it.
    data.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
    CUpti_ResourceData resource{}; // no context: the double has none
    resource.resourceDescriptor = &data;
    callback(userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, &resource);
  }
}

ApiCallback enter_api_callback(const char* name, bool driver, const void* params) {
  ApiCallback call;
  {
    std::lock_guard<std::recursive_mutex> lock(state().mu);
    const CuptiState& s = cupti_state();
    if (!s.subscriber) // the common case: nothing to look up
      return call;
    call.domain = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    call.cbid = api_cbid(name, driver);
    if (!wants_api_callback(s, call.domain, call.cbid))
      return ApiCallback{};
    call.callback = s.subscriber->callback;
    call.userdata = s.subscriber->userdata;
  }
  call.name = name;
  call.params = params;
  call.correlation = next_correlation.fetch_add(1);
  CUpti_CallbackData data{};
  data.callbackSite = CUPTI_API_ENTER;
  data.functionName = name;
  data.functionParams = params;
  data.correlationId = call.correlation;
  call.callback(call.userdata, call.domain, call.cbid, &data);
  return call;
}

void exit_api_callback(const ApiCallback& call, cudaError_t result) {
  if (!call.callback)
    return;
  CUresult driver_result = static_cast<CUresult>(result); // the double's codes: one value in both
  CUpti_CallbackData data{};
  data.callbackSite = CUPTI_API_EXIT;
  data.functionName = call.name;
  data.functionParams = call.params;
  data.functionReturnValue =
      call.domain == CUPTI_CB_DOMAIN_DRIVER_API ? static_cast<void*>(&driver_result) : &result;
  data.correlationId = call.correlation;
  call.callback(call.userdata, call.domain, call.cbid, &data);
}

} // namespace cuda_double::detail

namespace cuda_double {

void set_cupti_held_by_other_tool(bool held) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  cupti_state().held = held;
}

void set_cupti_subscriber_taken(bool taken) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  cupti_state().subscriber_taken = taken;
}

bool cupti_subscribed() {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  return cupti_state().subscriber != nullptr;
}

bool queue_kernel_activity(const kernel_activity& kernel) {
  std::lock_guard<std::recursive_mutex> lock(state().mu);
  CuptiState& s = cupti_state();
  if (!s.enabled_activity.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
      !s.enabled_activity.count(CUPTI_ACTIVITY_KIND_KERNEL))
    return false;
  s.queued.emplace_back(kernel, kernel.name != nullptr ? kernel.name : "");
  return true;
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

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  return cupti_api(__func__, [&] {
    if (!subscriber)
      return CUPTI_ERROR_INVALID_PARAMETER;
    CuptiState& s = cupti_state();
    if (s.subscriber || s.subscriber_taken)
      return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; // CUPTI allows one at a time
    auto fresh = std::make_unique<CUpti_Subscriber_st>();
    fresh->callback = callback;
    fresh->userdata = userdata;
    s.released.reset(); // only now: `fresh` cannot have the released handle's address
    s.subscriber = std::move(fresh);
    *subscriber = s.subscriber.get();
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  return cupti_api(__func__, [&] {
    CuptiState& s = cupti_state();
    if (!subscriber || subscriber != s.subscriber.get())
      return CUPTI_ERROR_INVALID_PARAMETER;
    s.released = std::move(s.subscriber); // its enabled callbacks go with it
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return cupti_api(__func__, [&] {
    CuptiState& s = cupti_state();
    if (!subscriber || subscriber != s.subscriber.get() || !valid_callback(domain, cbid))
      return CUPTI_ERROR_INVALID_PARAMETER;
    if (enable)
      subscriber->enabled.insert({domain, cbid});
    else
      subscriber->enabled.erase({domain, cbid});
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  return cupti_api(__func__, [&] {
    CuptiState& s = cupti_state();
    if (!subscriber || subscriber != s.subscriber.get() || domain <= CUPTI_CB_DOMAIN_INVALID ||
        domain >= CUPTI_CB_DOMAIN_SIZE)
      return CUPTI_ERROR_INVALID_PARAMETER;
    if (enable) {
      subscriber->enabled_domains.insert(domain);
    } else { // every callback of the domain, those enabled one by one too
      subscriber->enabled_domains.erase(domain);
      std::erase_if(subscriber->enabled, [&](const auto& id) { return id.first == domain; });
    }
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  return cupti_api(__func__, [&] {
    if (!funcBufferRequested || !funcBufferCompleted)
      return CUPTI_ERROR_INVALID_PARAMETER;
    activity_callbacks() = {funcBufferRequested, funcBufferCompleted};
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  return cupti_api(__func__, [&] {
    if (kind == CUPTI_ACTIVITY_KIND_INVALID)
      return CUPTI_ERROR_INVALID_KIND;
    cupti_state().enabled_activity.insert(kind);
    return CUPTI_SUCCESS;
  });
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  return cupti_api(__func__, [&] {
    if (kind == CUPTI_ACTIVITY_KIND_INVALID)
      return CUPTI_ERROR_INVALID_KIND;
    cupti_state().enabled_activity.erase(kind);
    return CUPTI_SUCCESS;
  });
}

// Delivers the records queued so far (queue_kernel_activity), whether or not their kind is still
// enabled: CUPTI buffers records as kernels run and hands them over at a flush.
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  std::vector<std::pair<cuda_double::kernel_activity, std::string>> due;
  ActivityCallbacks callbacks;
  const CUptiResult result = cupti_api(__func__, [&] {
    due.swap(cupti_state().queued);
    callbacks = activity_callbacks();
    return CUPTI_SUCCESS;
  });
  if (result == CUPTI_SUCCESS && callbacks.requested && callbacks.completed)
    deliver_activity(callbacks, due);
  return result;
}

// The records of a buffer the double filled: CUpti_ActivityKernel10 after one another.
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                                CUpti_Activity** record) {
  return cupti_api(__func__, [&] {
    if (!record)
      return CUPTI_ERROR_INVALID_PARAMETER;
    std::uint8_t* next = *record == nullptr ? buffer
                                            : reinterpret_cast<std::uint8_t*>(*record) +
                                                  sizeof(CUpti_ActivityKernel10);
    if (buffer == nullptr || next + sizeof(CUpti_ActivityKernel10) > buffer + validBufferSizeBytes)
      return CUPTI_ERROR_MAX_LIMIT_REACHED; // the end of a buffer
    *record = reinterpret_cast<CUpti_Activity*>(next);
    return CUPTI_SUCCESS;
  });
}

} // extern "C"
