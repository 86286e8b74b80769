// Streams. Eager work runs at once on the calling thread, so a stream is
// always idle: synchronization only has to apply the capture rules.
#include "state.hpp"

using namespace cuda_double::detail;

namespace cuda_double::detail {

CUstream_st* resolve_stream(cudaStream_t handle) {
  State& st = state();
  const int device = thread_state().device;
  if (handle == nullptr || handle == cudaStreamLegacy) {
    auto& s = st.legacy[device];
    if (!s) {
      s = std::make_unique<CUstream_st>();
      s->kind = CUstream_st::Kind::legacy;
      s->device = device;
      s->id = 1;
    }
    return s.get();
  }
  if (handle == cudaStreamPerThread) {
    auto& s = st.per_thread[{std::this_thread::get_id(), device}];
    if (!s) {
      s = std::make_unique<CUstream_st>();
      s->kind = CUstream_st::Kind::per_thread;
      s->device = device;
      s->id = st.next_stream_id++;
    }
    return s.get();
  }
  return st.streams.count(handle) ? handle : nullptr;
}

void run_host_function(cudaHostFn_t fn, void* data) {
  ThreadState& ts = thread_state();
  ts.in_callback = true;
  fn(data);
  thread_state().in_callback = false;
}

} // namespace cuda_double::detail

namespace {

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority) {
  if (!out)
    return cudaErrorInvalidValue;
  if (flags & ~static_cast<unsigned>(cudaStreamNonBlocking))
    return cudaErrorInvalidValue;
  State& st = state();
  const int device = thread_state().device;
  if (st.stream_bytes > 0) { // from the device's cache of 2 MiB pieces, as executables
    constexpr std::size_t piece = std::size_t{2} << 20;
    State::ExecCache& cache = st.exec_caches[device];
    const std::size_t need = (cache.used + st.stream_bytes + piece - 1) / piece * piece;
    if (need > cache.reserved) {
      if (device_bytes_in_use() + (need - cache.reserved) > st.total_memory)
        return cudaErrorMemoryAllocation;
      cache.reserved = need;
    }
    cache.used += st.stream_bytes;
  }
  auto* s = new CUstream_st;
  s->cache_bytes = st.stream_bytes;
  s->flags = flags;
  // Priorities are clamped to the device's range [-5, 0], as CUDA does.
  s->priority = priority > 0 ? 0 : (priority < -5 ? -5 : priority);
  s->device = thread_state().device;
  s->id = st.next_stream_id++;
  st.streams.insert(s);
  *out = s;
  return cudaSuccess;
}

// Synchronizing with a stream: illegal on a capturing stream, unsafe while
// the thread's capture mode forbids it, and an implicit dependency on any
// blocking capture when done on the legacy stream.
cudaError_t sync_stream(CUstream_st* s) {
  if (s->capture) {
    invalidate(s->capture);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (cudaError_t e = check_unsafe_call())
    return e;
  return check_legacy_implicit(s);
}

} // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return api(__func__, [&] { return create_stream(pStream, cudaStreamDefault, 0); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return api(__func__, [&] { return create_stream(pStream, flags, 0); });
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  return api(__func__, [&] { return create_stream(pStream, flags, priority); });
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return api(__func__, [&] {
    State& st = state();
    if (!st.streams.count(stream))
      return cudaErrorInvalidResourceHandle;
    if (Capture* c = stream->capture) {
      if (c->orphaned) {
        violation("cudaStreamDestroy of a stream capturing into a body graph that was destroyed "
                  "with its parent graph (the H200 crashes here: benchmark/probes/"
                  "body_abandon.cu)");
      }
      // A capture cannot survive losing one of its streams.
      invalidate(c);
      std::erase(c->streams, stream);
      if (c->origin == stream)
        c->origin = nullptr;
    }
    st.streams.erase(stream);
    st.exec_caches[stream->device].used -= stream->cache_bytes; // the pieces stay
    delete stream;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return api(__func__, [&] {
    CUstream_st* s = resolve_stream(stream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    if (cudaError_t e = sync_stream(s))
      return e;
    release_pools_on_sync();
    return cudaSuccess;
  });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return api(__func__, [&] {
    CUstream_st* s = resolve_stream(stream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    return sync_stream(s); // all work is complete: cudaSuccess
  });
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  return api(__func__, [&] {
    if (!flags)
      return cudaErrorInvalidValue;
    CUstream_st* s = resolve_stream(hStream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    *flags = s->flags;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  return api(__func__, [&] {
    if (!priority)
      return cudaErrorInvalidValue;
    CUstream_st* s = resolve_stream(hStream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    *priority = s->priority;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  return api(__func__, [&] {
    if (!device)
      return cudaErrorInvalidValue;
    CUstream_st* s = resolve_stream(hStream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    if (s->capture) { // seen on the H200: asking a capturing stream's device invalidates it
      invalidate(s->capture);
      return cudaErrorStreamCaptureUnsupported;
    }
    *device = s->device;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  return api(__func__, [&] {
    if (!streamId)
      return cudaErrorInvalidValue;
    CUstream_st* s = resolve_stream(hStream);
    if (!s)
      return cudaErrorInvalidResourceHandle;
    *streamId = s->id;
    return cudaSuccess;
  });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  return api(__func__, [&] {
    if (!fn)
      return cudaErrorInvalidValue;
    Target t;
    if (cudaError_t e = begin_stream_op(stream, t))
      return e;
    if (t.capture) {
      CUgraphNode_st* n = capture_node(t, cudaGraphNodeTypeHost);
      n->host.fn = fn;
      n->host.userData = userData;
    } else {
      run_host_function(fn, userData);
    }
    return cudaSuccess;
  });
}

} // extern "C"
