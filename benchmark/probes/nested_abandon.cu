// Probe (kept, docs/reliability.md): the nested capture of the reliability issue, through
// graphcap: a kernel; if_ whose body allocates from the pool and opens a while_; inside it a fork
// to a user stream that is never joined back, then a user exception. Run in a child process, so
// that a crash is reported; then what is left capturing, and whether the graph captures again.
//
//   nvcc -std=c++20 -arch=sm_90 -I../../include -o nested_abandon nested_abandon.cu
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

__global__ void tiny(int* p) {
  if (p != nullptr) {
    *p += 1;
  }
}

struct user_exception {};

static const char* capturing(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(s, &status);
  static_cast<void>(cudaGetLastError());
  if (e != cudaSuccess) {
    return cudaGetErrorName(e);
  }
  return status == cudaStreamCaptureStatusNone ? "not capturing" : "CAPTURING";
}

static void scenario(bool join) {
  cudaStream_t s{}, side{};
  cudaEvent_t e{};
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  graphcap::graph graph;
  try {
    graph.capture(s, [&](auto& cap) {
      tiny<<<1, 1, 0, cap.stream()>>>(nullptr);
      auto c = graphcap::make_condition(cap, 1);
      graphcap::if_(cap, c, [&](auto& body) {
        int* block = body.template allocate<int>(16);
        tiny<<<1, 1, 0, body.stream()>>>(block);
        auto more = graphcap::make_condition(body, 0);
        graphcap::while_(body, more, [&](auto& inner) {
          cudaEventRecord(e, inner.stream());
          cudaStreamWaitEvent(side, e, 0);
          tiny<<<1, 1, 0, side>>>(nullptr);
          if (join) {
            cudaEvent_t back{};
            cudaEventCreateWithFlags(&back, cudaEventDisableTiming);
            cudaEventRecord(back, side);
            cudaStreamWaitEvent(inner.stream(), back, 0);
          }
          throw user_exception{};
        });
      });
    });
    std::printf("  no exception\n");
  } catch (const user_exception&) {
    std::printf("  the user's exception arrived\n");
  } catch (const std::exception& other) {
    std::printf("  another exception: %s\n", other.what());
  }
  std::printf("  s: %s, side: %s, graph empty: %d\n", capturing(s), capturing(side),
              static_cast<int>(graph.empty()));
  try {
    graph.capture(s, [&](auto& cap) { tiny<<<1, 1, 0, cap.stream()>>>(nullptr); });
    graph.replay(s);
    cudaStreamSynchronize(s);
    std::printf("  captured and replayed again: %s\n", cudaGetErrorName(cudaGetLastError()));
  } catch (const std::exception& failure) {
    std::printf("  capturing again failed: %s\n", failure.what());
  }
}

static void run(const char* name, bool join) {
  std::printf("== %s\n", name);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    scenario(join);
    std::fflush(stdout);
    std::_Exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) {
    std::printf("  CRASHED: signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else {
    std::printf("  exit %d\n", WEXITSTATUS(status));
  }
}

int main() {
  run("fork to a user stream never joined, then a throw", false);
  run("fork joined back, then a throw", true);
  return 0;
}
