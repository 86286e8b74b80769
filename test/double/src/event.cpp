// Events. Eager records complete at once and take a host timestamp; records
// in a capture only mark the recording stream's frontier (for fork/join),
// unless cudaEventRecordExternal asks for an event record node.
#include "state.hpp"

using namespace cuda_double::detail;

namespace cuda_double::detail {

void record_event_now(CUevent_st* event) {
  event->state = CUevent_st::State::recorded;
  event->stamp = std::chrono::steady_clock::now();
  event->nodes.clear();
}

} // namespace cuda_double::detail

namespace {

constexpr unsigned kEventFlags =
    cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;

cudaError_t create_event(cudaEvent_t* out, unsigned flags) {
  if (!out)
    return cudaErrorInvalidValue;
  if (flags & ~kEventFlags)
    return cudaErrorInvalidValue;
  // Interprocess events must not time.
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
    return cudaErrorInvalidValue;
  auto* e = new CUevent_st;
  e->flags = flags;
  e->device = thread_state().device;
  state().events.insert(e);
  *out = e;
  return cudaSuccess;
}

cudaError_t record(cudaEvent_t event, cudaStream_t stream, unsigned flags) {
  if (!state().events.count(event))
    return cudaErrorInvalidResourceHandle;
  if (flags & ~static_cast<unsigned>(cudaEventRecordExternal))
    return cudaErrorInvalidValue;
  Target t;
  if (cudaError_t e = begin_stream_op(stream, t))
    return e;
  if (!t.capture) {
    record_event_now(event);
    return cudaSuccess;
  }
  if (flags & cudaEventRecordExternal) {
    capture_node(t, cudaGraphNodeTypeEventRecord)->event = event;
    return cudaSuccess;
  }
  event->state = CUevent_st::State::captured;
  event->capture_id = t.capture->id;
  event->nodes = t.stream->frontier;
  return cudaSuccess;
}

// Waiting for an event: unsafe during capture, and meaningless for an event
// whose last record was captured.
cudaError_t wait_for(cudaEvent_t event) {
  if (!state().events.count(event))
    return cudaErrorInvalidResourceHandle;
  if (cudaError_t e = check_unsafe_call())
    return e;
  if (event_capture(event))
    return cudaErrorCapturedEvent;
  return cudaSuccess;
}

} // namespace

extern "C" {

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return api(__func__, [&] { return create_event(event, cudaEventDefault); });
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return api(__func__, [&] { return create_event(event, flags); });
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return api(__func__, [&] {
    if (!state().events.erase(event))
      return cudaErrorInvalidResourceHandle;
    delete event;
    return cudaSuccess;
  });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return api(__func__, [&] { return record(event, stream, cudaEventRecordDefault); });
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return api(__func__, [&] { return record(event, stream, flags); });
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return api(__func__, [&] {
    if (cudaError_t e = wait_for(event))
      return e;
    release_pools_on_sync();
    return cudaSuccess;
  });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  return api(__func__, [&] { return wait_for(event); });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return api(__func__, [&] {
    if (!ms)
      return cudaErrorInvalidValue;
    State& st = state();
    if (!st.events.count(start) || !st.events.count(end))
      return cudaErrorInvalidResourceHandle;
    if ((start->flags | end->flags) & cudaEventDisableTiming)
      return cudaErrorInvalidResourceHandle;
    if (event_capture(start) || event_capture(end))
      return cudaErrorCapturedEvent;
    if (start->state != CUevent_st::State::recorded || end->state != CUevent_st::State::recorded) {
      return cudaErrorInvalidResourceHandle;
    }
    const std::chrono::duration<float, std::milli> d = end->stamp - start->stamp;
    *ms = d.count();
    return cudaSuccess;
  });
}

} // extern "C"
