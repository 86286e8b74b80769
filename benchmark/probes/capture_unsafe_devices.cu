// Probe (kept, docs/testing.md): which capture the capture-unsafe cudaMalloc and a synchronous
// cudaMemcpy break, by thread, capture mode and current device; and what captures and graph
// nodes whose memory lies on another device than their stream's do. The test double models the
// documented mode rule (thread and mode decide, the device does not); the cases needing two
// devices print "not probed" on a machine with one.
//
//   nvcc -std=c++20 -arch=sm_90 -o capture_unsafe_devices capture_unsafe_devices.cu
#include <cuda_runtime.h>

#include <cstdio>
#include <thread>

__global__ void touch(int* p) {
  if (p)
    *p = 1;
}

#define SAY(call)                                                                                  \
  do {                                                                                             \
    cudaError_t s_ = (call);                                                                       \
    std::printf("  %-72s -> %s\n", #call, cudaGetErrorName(s_));                                   \
    static_cast<void>(cudaGetLastError());                                                         \
  } while (0)

namespace {

const char* status_name(cudaStream_t s) {
  cudaStreamCaptureStatus st{};
  const cudaError_t e = cudaStreamIsCapturing(s, &st);
  static_cast<void>(cudaGetLastError());
  if (e != cudaSuccess)
    return cudaGetErrorName(e);
  return st == cudaStreamCaptureStatusActive        ? "active"
         : st == cudaStreamCaptureStatusInvalidated ? "invalidated"
                                                    : "none";
}

void end(cudaStream_t s) {
  std::printf("  capture before its end: %s\n", status_name(s));
  cudaGraph_t g{};
  SAY(cudaStreamEndCapture(s, &g));
  if (g)
    cudaGraphDestroy(g);
}

// `call` on another thread, in `mode` there.
template <class Call>
void elsewhere(cudaStreamCaptureMode mode, Call call) {
  std::thread t([&] {
    cudaStreamCaptureMode m = mode;
    cudaThreadExchangeStreamCaptureMode(&m);
    call();
    cudaThreadExchangeStreamCaptureMode(&m);
  });
  t.join();
}

void mode_rule(cudaStream_t s, int* arg) {
  void* p = nullptr;
  std::printf("== global capture, cudaMalloc on the capturing thread\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  touch<<<1, 1, 0, s>>>(arg);
  SAY(cudaMalloc(&p, 256));
  end(s);
  std::printf("== global capture, cudaMalloc on another thread (global mode there)\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  touch<<<1, 1, 0, s>>>(arg);
  elsewhere(cudaStreamCaptureModeGlobal, [&] { SAY(cudaMalloc(&p, 256)); });
  end(s);
  std::printf("== global capture, cudaMalloc on another thread (thread-local mode there)\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  touch<<<1, 1, 0, s>>>(arg);
  elsewhere(cudaStreamCaptureModeThreadLocal, [&] { SAY(cudaMalloc(&p, 256)); });
  end(s);
  std::printf("== thread-local capture, cudaMalloc on the capturing thread\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  touch<<<1, 1, 0, s>>>(arg);
  SAY(cudaMalloc(&p, 256));
  end(s);
  std::printf("== thread-local capture, cudaMalloc on another thread (global mode there)\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  touch<<<1, 1, 0, s>>>(arg);
  elsewhere(cudaStreamCaptureModeGlobal, [&] { SAY(cudaMalloc(&p, 256)); });
  end(s);
  std::printf("== global capture, synchronous cudaMemcpy (pageable host -> device) on the "
              "capturing thread\n");
  int host = 0;
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  touch<<<1, 1, 0, s>>>(arg);
  SAY(cudaMemcpy(arg, &host, sizeof host, cudaMemcpyHostToDevice));
  end(s);
  std::printf("== global capture, synchronous cudaMemcpy on another thread\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  touch<<<1, 1, 0, s>>>(arg);
  elsewhere(cudaStreamCaptureModeGlobal,
            [&] { SAY(cudaMemcpy(arg, &host, sizeof host, cudaMemcpyHostToDevice)); });
  end(s);
}

// Device 1 current while a stream of device 0 captures.
void other_device(cudaStream_t s, int* arg) {
  void* p = nullptr;
  std::printf("== global capture on device 0, cudaMalloc with device 1 current (same thread)\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  touch<<<1, 1, 0, s>>>(arg);
  cudaSetDevice(1);
  SAY(cudaMalloc(&p, 256));
  cudaSetDevice(0);
  end(s);
  std::printf("== global capture on device 0, cudaMalloc on another thread on device 1\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  touch<<<1, 1, 0, s>>>(arg);
  elsewhere(cudaStreamCaptureModeGlobal, [&] {
    cudaSetDevice(1);
    SAY(cudaMalloc(&p, 256));
  });
  end(s);
  std::printf("== thread-local capture on device 0, cudaMalloc with device 1 current\n");
  SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  touch<<<1, 1, 0, s>>>(arg);
  cudaSetDevice(1);
  SAY(cudaMalloc(&p, 256));
  cudaSetDevice(0);
  end(s);
}

// Memory of device 1 in work of a device-0 stream or graph, without and with peer access.
void operand_devices(cudaStream_t s) {
  int* on0 = nullptr;
  int* on1 = nullptr;
  cudaMalloc(&on0, 4096);
  cudaSetDevice(1);
  cudaMalloc(&on1, 4096);
  cudaSetDevice(0);
  for (int peer = 0; peer < 2; ++peer) {
    if (peer == 1) {
      std::printf("== with peer access 0 -> 1 enabled\n");
      SAY(cudaDeviceEnablePeerAccess(1, 0));
    }
    std::printf("== captured cudaMemsetAsync of device-1 memory on a device-0 stream\n");
    SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    SAY(cudaMemsetAsync(on1, 1, 4096, s));
    cudaGraph_t g{};
    SAY(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t exec{};
    if (g) {
      SAY(cudaGraphInstantiate(&exec, g, 0));
      if (exec) {
        SAY(cudaGraphLaunch(exec, s));
        SAY(cudaStreamSynchronize(s));
        cudaGraphExecDestroy(exec);
      }
      cudaGraphDestroy(g);
    }
    std::printf("== captured cudaMemcpyAsync device 1 -> device 0 (a peer copy) on device 0\n");
    SAY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    SAY(cudaMemcpyAsync(on0, on1, 4096, cudaMemcpyDeviceToDevice, s));
    g = nullptr;
    SAY(cudaStreamEndCapture(s, &g));
    if (g) {
      SAY(cudaGraphInstantiate(&exec, g, 0));
      if (exec) {
        SAY(cudaGraphLaunch(exec, s));
        SAY(cudaStreamSynchronize(s));
        cudaGraphExecDestroy(exec);
      }
      cudaGraphDestroy(g);
    }
    std::printf("== cudaGraphAddMemsetNode of device-1 memory, device 0 current\n");
    cudaGraphCreate(&g, 0);
    cudaMemsetParams p{};
    p.dst = on1;
    p.value = 2;
    p.elementSize = 1;
    p.width = 4096;
    p.height = 1;
    cudaGraphNode_t n{};
    SAY(cudaGraphAddMemsetNode(&n, g, nullptr, 0, &p));
    exec = nullptr;
    SAY(cudaGraphInstantiate(&exec, g, 0));
    if (exec) {
      SAY(cudaGraphLaunch(exec, s));
      SAY(cudaStreamSynchronize(s));
      cudaGraphExecDestroy(exec);
    }
    cudaGraphDestroy(g);
  }
  cudaDeviceDisablePeerAccess(1);
  static_cast<void>(cudaGetLastError());
}

} // namespace

int main() {
  int devices = 0;
  cudaGetDeviceCount(&devices);
  std::printf("devices: %d\n", devices);
  cudaSetDevice(0);
  int* arg = nullptr;
  cudaMalloc(&arg, 256);
  cudaStream_t s{};
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  mode_rule(s, arg);
  if (devices < 2) {
    std::printf("== device 1 current during a capture on device 0: not probed (one device)\n");
    std::printf("== operands on another device: not probed (one device)\n");
    return 0;
  }
  other_device(s, arg);
  operand_devices(s);
  return 0;
}
