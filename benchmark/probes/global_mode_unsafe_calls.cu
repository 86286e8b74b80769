// Probe (kept, issue #48 goal 2): which of graphcap's lifecycle calls are "potentially unsafe"
// under cudaStreamCaptureModeGlobal, i.e. which ones, made by a second thread in the default
// (global) capture mode while a first thread runs a global-mode capture, fail and invalidate that
// capture. CUDA's reference does not list the unsafe calls; graphcap wraps cudaGraphInstantiate,
// cudaGraphExecDestroy, cudaGraphDestroy (and others) in a relaxed-mode guard, two
// cudaThreadExchangeStreamCaptureMode calls each time, which is most of what its whole capture
// life costs above a hand-written one at 1 node. A call this probe shows safe needs no guard.
//
// For each call: thread 1 begins a global capture on its stream and launches a kernel into it;
// thread 2, in its own default mode (global), makes the call once; thread 1 then launches a
// second kernel and ends the capture. Printed: the call's status, the capture's status after it,
// and the end's status. A control row repeats each call with thread 2 in relaxed mode, and one
// with thread 2 in thread-local mode.
//
//   nvcc -std=c++20 -O2 -arch=sm_90 -o global_mode_unsafe_calls global_mode_unsafe_calls.cu
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

__global__ void tiny(int* sink) {
  if (threadIdx.x == 0) {
    ++*sink;
  }
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("setup %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

/// A graph and its executable made outside any capture, for the destroy and instantiate calls.
struct prepared {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

prepared make_prepared(cudaStream_t stream, int* sink) {
  prepared made;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin");
  tiny<<<1, 32, 0, stream>>>(sink);
  check(cudaStreamEndCapture(stream, &made.graph), "end");
  check(cudaGraphInstantiateWithFlags(&made.exec, made.graph, 0), "instantiate");
  return made;
}

struct call_case {
  const char* name;
  std::function<cudaError_t(prepared&)> call;
};

/// Runs `call` on a second thread in `mode` while this thread captures globally.
void run_case(const call_case& c, cudaStreamCaptureMode mode, const char* mode_name,
              cudaStream_t capture, cudaStream_t other, int* sink) {
  prepared p = make_prepared(other, sink);
  check(cudaStreamSynchronize(other), "sync");
  check(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal), "capture begin");
  tiny<<<1, 32, 0, capture>>>(sink);
  cudaError_t call_status = cudaSuccess;
  std::thread second([&] {
    cudaStreamCaptureMode m = mode;
    cudaThreadExchangeStreamCaptureMode(&m);
    call_status = c.call(p);
    static_cast<void>(cudaGetLastError());
    cudaThreadExchangeStreamCaptureMode(&m);
  });
  second.join();
  tiny<<<1, 32, 0, capture>>>(sink);
  const cudaError_t launch_status = cudaGetLastError();
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  static_cast<void>(cudaStreamIsCapturing(capture, &status));
  cudaGraph_t captured = nullptr;
  const cudaError_t end_status = cudaStreamEndCapture(capture, &captured);
  static_cast<void>(cudaGetLastError());
  std::printf("%-40s thread 2 %-12s call %-36s capture after it %-12s end %s%s\n", c.name,
              mode_name, cudaGetErrorName(call_status),
              status == cudaStreamCaptureStatusActive        ? "active"
              : status == cudaStreamCaptureStatusInvalidated ? "INVALIDATED"
                                                             : "none",
              cudaGetErrorName(end_status),
              launch_status != cudaSuccess ? " (second launch failed)" : "");
  if (captured != nullptr) {
    cudaGraphDestroy(captured);
  }
  // What the call did not destroy.
  if (p.exec != nullptr) {
    cudaGraphExecDestroy(p.exec);
  }
  if (p.graph != nullptr) {
    cudaGraphDestroy(p.graph);
  }
  static_cast<void>(cudaGetLastError());
  check(cudaDeviceSynchronize(), "device sync");
}

} // namespace

int main() {
  int* sink = nullptr;
  check(cudaMalloc(&sink, sizeof(int)), "cudaMalloc");
  cudaStream_t capture = nullptr;
  cudaStream_t other = nullptr;
  check(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking), "stream");
  check(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "stream");

  const std::vector<call_case> cases{
      {"cudaGetDevice",
       [](prepared&) {
         int device = -1;
         return cudaGetDevice(&device);
       }},
      {"cudaThreadExchangeStreamCaptureMode",
       [](prepared&) {
         cudaStreamCaptureMode m = cudaStreamCaptureModeGlobal;
         const cudaError_t s = cudaThreadExchangeStreamCaptureMode(&m);
         cudaThreadExchangeStreamCaptureMode(&m);
         return s;
       }},
      {"cudaGraphInstantiateWithFlags",
       [](prepared& p) {
         cudaGraphExec_t again = nullptr;
         const cudaError_t s = cudaGraphInstantiateWithFlags(&again, p.graph, 0);
         if (again != nullptr) {
           cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
           cudaThreadExchangeStreamCaptureMode(&m);
           cudaGraphExecDestroy(again);
           cudaThreadExchangeStreamCaptureMode(&m);
         }
         return s;
       }},
      {"cudaGraphExecDestroy",
       [](prepared& p) {
         const cudaError_t s = cudaGraphExecDestroy(p.exec);
         if (s == cudaSuccess) {
           p.exec = nullptr;
         }
         return s;
       }},
      {"cudaGraphDestroy",
       [](prepared& p) {
         const cudaError_t s = cudaGraphDestroy(p.graph);
         if (s == cudaSuccess) {
           p.graph = nullptr;
         }
         return s;
       }},
      {"cudaGraphExecDestroy then cudaGraphDestroy",
       [](prepared& p) {
         cudaError_t s = cudaGraphExecDestroy(p.exec);
         if (s == cudaSuccess) {
           p.exec = nullptr;
           s = cudaGraphDestroy(p.graph);
           if (s == cudaSuccess) {
             p.graph = nullptr;
           }
         }
         return s;
       }},
      {"cudaGraphExecUpdate",
       [](prepared& p) {
         cudaGraphExecUpdateResultInfo info{};
         return cudaGraphExecUpdate(p.exec, p.graph, &info);
       }},
      {"cudaStreamCreateWithFlags",
       [](prepared&) {
         cudaStream_t s = nullptr;
         const cudaError_t status = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
         if (s != nullptr) {
           cudaStreamDestroy(s);
         }
         return status;
       }},
      {"cudaEventCreateWithFlags",
       [](prepared&) {
         cudaEvent_t e = nullptr;
         const cudaError_t status = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
         if (e != nullptr) {
           cudaEventDestroy(e);
         }
         return status;
       }},
      {"cudaMalloc + cudaFree (2 MiB)",
       [](prepared&) {
         void* m = nullptr;
         cudaError_t s = cudaMalloc(&m, std::size_t{2} << 20);
         if (s == cudaSuccess) {
           s = cudaFree(m);
         }
         return s;
       }},
  };
  std::printf("a global capture on thread 1; each call made once by thread 2 in the mode shown\n");
  for (const call_case& c : cases) {
    run_case(c, cudaStreamCaptureModeGlobal, "global", capture, other, sink);
    run_case(c, cudaStreamCaptureModeThreadLocal, "thread_local", capture, other, sink);
    run_case(c, cudaStreamCaptureModeRelaxed, "relaxed", capture, other, sink);
  }
  cudaStreamDestroy(capture);
  cudaStreamDestroy(other);
  cudaFree(sink);
  return 0;
}
